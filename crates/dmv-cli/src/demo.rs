//! `dmv demo`: a studio's day across replicas on this machine, on
//! generated media. A laptop commits a shoot and retouches it; a hub is
//! served over HTTP with its web UI; a phone makes a meta clone (all the
//! history, none of the data) and gets one photo; `whereis` names its
//! copies; a drop on the phone keeps `numcopies`; an edit on the phone
//! syncs back to the laptop. Each step runs the real command (this same
//! binary), printed as a person would type it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use dmv_repo::human_bytes;
use rand::{Rng, RngCore, SeedableRng};

#[derive(Args)]
pub struct DemoArgs {
    /// Total size of the generated sample media, in MiB.
    #[arg(long, default_value_t = 96)]
    size_mib: u64,
    /// Make the replicas here instead of a temporary folder (kept afterwards).
    #[arg(long = "dir", value_name = "DIR")]
    keep_in: Option<PathBuf>,
    /// Leave the hub's server and the replicas running to explore (Ctrl-C ends it).
    #[arg(long)]
    keep: bool,
}

fn write_random(path: &Path, len: u64, rng: &mut rand::rngs::StdRng) -> Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| path.display().to_string())?,
    );
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        rng.fill_bytes(&mut buf[..n]);
        f.write_all(&buf[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// A JPEG of a sky-like gradient with grain, different for each `seed`:
/// the web UI shows real thumbnails of it.
fn write_photo(path: &Path, seed: u64) -> Result<()> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (hue, w, h) = (rng.gen_range(0..3usize), 1600u32, 1067u32);
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        let grain: i32 = rng.gen_range(-12..12);
        let base = [(x * 255 / w) as i32, (y * 255 / h) as i32, 160];
        let px = |i: usize| (base[(i + hue) % 3] + grain).clamp(0, 255) as u8;
        image::Rgb([px(0), px(1), px(2)])
    });
    img.save_with_format(path, image::ImageFormat::Jpeg)
        .with_context(|| path.display().to_string())
}

/// A 16-bit mono WAV: a few tones with noise, like a field recording.
fn write_wav(path: &Path, seconds: u32, rng: &mut rand::rngs::StdRng) -> Result<()> {
    let rate = 48_000u32;
    let samples = rate * seconds;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    f.write_all(b"RIFF")?;
    f.write_all(&(36 + samples * 2).to_le_bytes())?;
    f.write_all(b"WAVEfmt ")?;
    f.write_all(&16u32.to_le_bytes())?;
    f.write_all(&[1, 0, 1, 0])?;
    f.write_all(&rate.to_le_bytes())?;
    f.write_all(&(rate * 2).to_le_bytes())?;
    f.write_all(&[2, 0, 16, 0])?;
    f.write_all(b"data")?;
    f.write_all(&(samples * 2).to_le_bytes())?;
    let freq: f64 = rng.gen_range(110.0..880.0);
    for i in 0..samples {
        let t = i as f64 / rate as f64;
        let v = (t * freq * std::f64::consts::TAU).sin() * 9000.0
            + (t * freq * 1.5 * std::f64::consts::TAU).sin() * 3000.0
            + rng.gen_range(-400.0..400.0);
        f.write_all(&(v as i16).to_le_bytes())?;
    }
    Ok(())
}

/// Runs this dmv as a person would in the replica `name` (a folder of
/// `root`), printing the command and what it said; fails when it fails,
/// unless `may_fail`.
struct Day {
    root: PathBuf,
    exe: PathBuf,
    token: String,
}

impl Day {
    fn run(&self, name: &str, args: &[&str], may_fail: bool) -> Result<String> {
        let shown: Vec<String> = args
            .iter()
            .map(|a| {
                if a.contains(' ') {
                    format!("'{a}'")
                } else {
                    a.to_string()
                }
            })
            .collect();
        println!("{name}$ dmv {}", shown.join(" "));
        let dir = if name == "studio" {
            self.root.clone()
        } else {
            self.root.join(name)
        };
        let out = Command::new(&self.exe)
            .args(args)
            .current_dir(&dir)
            .env("DMV_TOKEN", &self.token)
            .env("DMV_AUTHOR_NAME", format!("{name} of the studio"))
            .env("DMV_AUTHOR_EMAIL", format!("{name}@studio.example"))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {}", self.exe.display()))?;
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for line in said.lines().filter(|l| !l.trim().is_empty()).take(12) {
            println!("    {line}");
        }
        if !out.status.success() && !may_fail {
            bail!("dmv {} failed in {name}", args.join(" "));
        }
        Ok(said)
    }
}

/// `dmv serve` of the hub on a free port of loopback; its URL.
fn serve(day: &Day, hub: &Path) -> Result<(Child, String)> {
    let config = day.root.join("hub.toml");
    let hub = hub
        .to_string_lossy()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    let text = format!("[repos]\nhub = \"{hub}\"\n[tokens]\n\"{}\" = {{ access = \"admin\", user = \"studio\" }}\n", day.token);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode_private()
        .open(&config)?;
    file.write_all(text.as_bytes())?;
    let mut child = Command::new(&day.exe)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().context("no stderr from dmv serve")?;
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(url) = line.split("listening on ").nth(1) {
                    break url.trim().to_string();
                }
            }
            _ => bail!("dmv serve did not start"),
        }
    };
    // Keep reading, so the server never blocks writing to a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Ok((child, url))
}

/// Owner-only permissions: the server's config holds its token.
trait PrivateFile {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateFile for std::fs::OpenOptions {
    fn mode_private(&mut self) -> &mut Self {
        use dmv_os::OpenOptionsExt;
        self.mode(0o600)
    }
}

/// Stops the server however the demo ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run(a: DemoArgs) -> Result<u8> {
    let started = Instant::now();
    let tmp;
    let root = match &a.keep_in {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => {
            tmp = tempfile::Builder::new().prefix("dmv-demo-").tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let mut token_bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut token_bytes);
    let day = Day {
        root: root.clone(),
        exe: std::env::current_exe()?,
        token: token_bytes.iter().map(|b| format!("{b:02x}")).collect(),
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(2017);
    let total = a.size_mib.max(8) << 20;
    let raw_size = 6u64 << 20;
    let raws = ((total * 2 / 3) / raw_size).max(1);
    let photos = 12u64;
    let takes = ((total / 3) / (8 << 20)).max(1);
    let laptop = root.join("laptop");
    println!(
        "A studio's day with {} of sample media, in {}\n",
        human_bytes(total),
        root.display()
    );
    for dir in ["shoot/raw", "shoot/jpeg", "shoot/audio"] {
        std::fs::create_dir_all(laptop.join(dir))?;
    }
    for i in 0..raws {
        write_random(
            &laptop.join(format!("shoot/raw/IMG_{:04}.CR3", i + 1)),
            raw_size,
            &mut rng,
        )?;
    }
    for i in 0..photos {
        write_photo(&laptop.join(format!("shoot/jpeg/IMG_{:04}.jpg", i + 1)), i)?;
    }
    for i in 0..takes {
        write_wav(
            &laptop.join(format!("shoot/audio/take_{:02}.wav", i + 1)),
            87,
            &mut rng,
        )?;
    }
    std::fs::write(
        laptop.join("shoot/shotlist.txt"),
        "scene 1: harbour at dawn\nscene 2: market\n",
    )?;

    println!("1. The laptop commits the shoot, then a retouch of three raws.");
    day.run("laptop", &["init"], false)?;
    day.run("laptop", &["add", "."], false)?;
    day.run("laptop", &["commit", "-q", "-m", "Day 1 shoot"], false)?;
    for i in 1..=3.min(raws) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(laptop.join(format!("shoot/raw/IMG_{i:04}.CR3")))?;
        let mut patch = vec![0u8; 64 << 10];
        rng.fill_bytes(&mut patch);
        dmv_os::FileExt::write_all_at(&f, &patch, raw_size / 2)?;
    }
    day.run(
        "laptop",
        &["commit", "-q", "-a", "-m", "Retouch three raws"],
        false,
    )?;
    day.run("laptop", &["stats"], false)?;

    println!("\n2. A hub: the laptop pushes to it, and it is served over HTTP with its web UI.");
    day.run("studio", &["init", "-q", "--bare", "hub"], false)?;
    day.run("laptop", &["remote", "add", "origin", "../hub"], false)?;
    day.run("laptop", &["push", "-q", "-u", "origin", "main"], false)?;
    let (child, url) = serve(&day, &root.join("hub"))?;
    let server = Server(child);
    println!("studio$ dmv serve --config hub.toml     # {url}");

    println!("\n3. A phone makes a meta clone (all the history, no data) and gets one photo.");
    let hub_url = format!("{url}/hub");
    day.run(
        "studio",
        &["clone", "-q", "--slice", "meta", &hub_url, "phone"],
        false,
    )?;
    day.run("phone", &["ls", "--absent", "shoot/jpeg"], false)?;
    day.run("phone", &["get", "shoot/jpeg/IMG_0001.jpg"], false)?;
    day.run("phone", &["whereis", "shoot/jpeg/IMG_0001.jpg"], false)?;

    println!(
        "\n4. The phone frees the photo again: only when enough copies stay elsewhere (numcopies)."
    );
    day.run("phone", &["drop", "shoot/jpeg/IMG_0001.jpg"], true)?;
    day.run(
        "phone",
        &["drop", "--numcopies", "1", "shoot/jpeg/IMG_0001.jpg"],
        false,
    )?;

    println!("\n5. The phone edits the shot list; the edit syncs back to the laptop.");
    day.run("phone", &["get", "-q", "shoot/shotlist.txt"], false)?;
    let list = root.join("phone/shoot/shotlist.txt");
    let mut text = std::fs::read_to_string(&list)?;
    text.push_str("scene 3: the ferry, from the phone\n");
    std::fs::write(&list, text)?;
    day.run(
        "phone",
        &["commit", "-q", "-a", "-m", "Scene 3 added on the phone"],
        false,
    )?;
    day.run("phone", &["push", "-q"], false)?;
    day.run("laptop", &["pull", "-q"], false)?;
    day.run("laptop", &["log", "--oneline"], false)?;
    let synced = std::fs::read_to_string(laptop.join("shoot/shotlist.txt"))?;
    println!(
        "laptop$ tail -1 shoot/shotlist.txt\n    {}",
        synced.lines().last().unwrap_or("")
    );
    if !synced.contains("scene 3") {
        bail!("the phone's edit did not reach the laptop");
    }
    day.run("laptop", &["fsck"], false)?;

    println!("\nDone in {:.1} s.", started.elapsed().as_secs_f64());
    if a.keep {
        println!("Web UI: {url}/hub/   (log in with the token {})", day.token);
        println!(
            "Replicas: {}/{{laptop,hub,phone}}. Left running: Ctrl-C ends the server{}.",
            root.display(),
            if a.keep_in.is_none() {
                " and removes them"
            } else {
                ""
            }
        );
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(signal, stop.clone())?;
        }
        let mut server = server;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) && server.0.try_wait()?.is_none() {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        println!("Stopped.");
    } else {
        // The server stops as the demo ends: no address that leads nowhere.
        println!("To browse the hub in the web UI, run it with --keep.");
    }
    Ok(0)
}
