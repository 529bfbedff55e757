//! `dmv demo`: DMV's main job end to end on generated media: a shoot of
//! photos and audio takes is committed, retouched, extended, committed again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use dmv_repo::store::ChunkParams;
use dmv_repo::{human_bytes, Repository};
use rand::{Rng, RngCore, SeedableRng};

use crate::progress::Bar;

#[derive(Args)]
pub struct DemoArgs {
    /// Total size of the generated sample media, in MiB.
    #[arg(long, default_value_t = 300)]
    size_mib: u64,
    /// Keep the repository here instead of a temporary folder.
    #[arg(long = "dir", value_name = "DIR")]
    keep_in: Option<PathBuf>,
}

fn write_random(path: &Path, len: u64, rng: &mut rand::rngs::StdRng) -> Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).with_context(|| path.display().to_string())?);
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
        let v = (t * freq * std::f64::consts::TAU).sin() * 9000.0 + (t * freq * 1.5 * std::f64::consts::TAU).sin() * 3000.0 + rng.gen_range(-400.0..400.0);
        f.write_all(&(v as i16).to_le_bytes())?;
    }
    Ok(())
}

fn commit_all(repo: &Repository, message: &str) -> Result<f64> {
    let start = Instant::now();
    let p = Bar::new("adding");
    repo.add(&[Vec::new()], false, &p)?;
    p.finish();
    let id = repo.commit_staged(message)?.context("nothing to commit")?;
    let secs = start.elapsed().as_secs_f64();
    println!("  committed {} in {secs:.2} s", id.short());
    Ok(secs)
}

pub fn run(a: DemoArgs) -> Result<u8> {
    let tmp;
    let root = match a.keep_in {
        Some(d) => d,
        None => {
            tmp = tempfile::Builder::new().prefix("dmv-demo-").tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(2017);
    let total = a.size_mib.max(8) << 20;
    let photo_size = 8u64 << 20;
    let photos = ((total * 2 / 3) / photo_size).max(1);
    let takes = ((total / 3) / (8 << 20)).max(1);
    println!("Generating {} of sample media in {}", human_bytes(total), root.display());
    std::fs::create_dir_all(root.join("shoot/photos"))?;
    std::fs::create_dir_all(root.join("shoot/audio"))?;
    for i in 0..photos {
        write_random(&root.join(format!("shoot/photos/IMG_{:04}.CR3", i + 1)), photo_size, &mut rng)?;
    }
    for i in 0..takes {
        write_wav(&root.join(format!("shoot/audio/take_{:02}.wav", i + 1)), 87, &mut rng)?;
    }
    std::fs::write(root.join("shoot/shotlist.txt"), "scene 1: harbour at dawn\nscene 2: market\n")?;

    let repo = Repository::init(&root, ChunkParams::default())?;
    println!("\n1. dmv init; dmv add .; dmv commit -m 'Day 1 shoot'");
    let t1 = commit_all(&repo, "Day 1 shoot")?;
    let first = repo.stats()?;
    println!("  {} of media -> {} stored ({:.0} MB/s)", human_bytes(first.logical_bytes), human_bytes(first.stored_bytes), first.logical_bytes as f64 / 1e6 / t1);

    println!("\n2. Retouch three photos, extend a take, add two photos, rename the audio folder");
    for i in 1..=3.min(photos) {
        let path = root.join(format!("shoot/photos/IMG_{i:04}.CR3"));
        let f = std::fs::OpenOptions::new().write(true).open(&path)?;
        let mut patch = vec![0u8; 64 << 10];
        rng.fill_bytes(&mut patch);
        use std::os::unix::fs::FileExt;
        f.write_all_at(&patch, photo_size / 2)?;
    }
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(root.join("shoot/audio/take_01.wav"))?;
        let mut tail = vec![0u8; 1 << 20];
        rng.fill_bytes(&mut tail);
        f.write_all(&tail)?;
    }
    for i in 0..2 {
        write_random(&root.join(format!("shoot/photos/IMG_{:04}.CR3", photos + i + 1)), photo_size, &mut rng)?;
    }
    repo.mv(b"shoot/audio", b"shoot/sound")?;
    let t2 = commit_all(&repo, "Retouch, extra takes, rename audio")?;
    let second = repo.stats()?;
    let added = second.stored_bytes - first.stored_bytes;
    println!("  store grew by {} for {} of new history ({:.2} s)", human_bytes(added), human_bytes(second.logical_bytes - first.logical_bytes), t2);

    println!("\n3. dmv log --oneline");
    for info in repo.walk(&[repo.resolve("HEAD")?])? {
        let info = info?;
        println!("  {} {}", info.id.short(), info.commit.message);
    }
    println!("\n4. dmv diff --name-status HEAD~1 HEAD");
    let old = dmv_repo::tree::flatten(&repo.store, &repo.commit(&repo.resolve("HEAD~1")?)?.tree)?;
    let new = dmv_repo::tree::flatten(&repo.store, &repo.commit(&repo.resolve("HEAD")?)?.tree)?;
    for listed in dmv_repo::find_renames(&repo.store, dmv_repo::diff_flat(&old, &new))? {
        match listed {
            dmv_repo::Listed::Change(c) => println!("  {}\t{}", c.kind.letter(), String::from_utf8_lossy(&c.path)),
            dmv_repo::Listed::Renamed { from, to, similarity, .. } => println!("  R{similarity:03}\t{}\t{}", String::from_utf8_lossy(&from), String::from_utf8_lossy(&to)),
        }
    }
    println!("\n5. dmv fsck");
    let report = repo.store.verify_reachable(&repo.roots()?, false, &dmv_repo::Tally::silent())?;
    println!("  checked {} objects: {}", report.objects_checked, if report.is_clean() { "no problems found" } else { "DAMAGED" });
    println!("\n6. dmv stats");
    println!("  {} commits hold {} of files; the store holds {} in {} packs", second.commits, human_bytes(second.logical_bytes), human_bytes(second.stored_bytes), second.packs);
    println!("  dedup saves {} ({:.2}x)", human_bytes(second.logical_bytes.saturating_sub(second.stored_bytes)), second.dedup_ratio);
    Ok(if report.is_clean() { 0 } else { 1 })
}
