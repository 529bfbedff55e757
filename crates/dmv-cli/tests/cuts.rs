//! Cut connections: a proxy between dmv and a real server (`dmv serve` over
//! HTTP, sshd, MinIO) cuts every connection once a chosen number of bytes
//! has passed, during pushes and clones. Each command fails in one line;
//! run again over a whole network it completes, sending at most one pack's
//! worth again (a clone: only what had not arrived).
//!
//! The suite cuts each transfer at 2 places; `DMV_CUTS=full` (scripts/faults)
//! at 17 (102 cuts) and writes `cuts.json` to `$DMV_FAULTS_REPORT_DIR`. Each
//! place is a random offset within its own slice of the transfer (so cuts
//! cover all of it but its last answers, and no two runs cut at the same bytes), drawn
//! from `DMV_CUTS_SEED` (a new seed each run when unset, printed to repeat it).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use common::needs::{lacks, Need};
use common::proxy::CuttingProxy;
use common::remote::{commit_all, fsck_clean, head_of, one_line_error};
use common::servers::{HttpServer, S3Server, Sshd};
use common::*;

const MIB: u64 = 1 << 20;
/// The pack size of the hubs here (a bucket's packs are 32 MiB; a clone
/// writes the default 64 MiB, so a cut clone of these 30 MiB may receive
/// all of it again: its bound says little, the pushes' more).
const PACK: u64 = 8 * MIB;
const BUCKET_PACK: u64 = 32 * MIB;

fn set_pack_limit(repo: &Path) {
    edit_config(repo, |cfg| cfg["pack_size_limit"] = serde_json::json!(PACK));
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Http,
    Ssh,
    Bucket,
}

/// What the cuts of one transfer did.
#[derive(Default, serde::Serialize)]
struct Cuts {
    cuts: u64,
    /// Bytes through the proxy for the transfer uncut, and the most any rerun carried.
    whole: u64,
    largest_rerun: u64,
    /// The most bytes that passed before a cut and again in its rerun (cut + rerun - uncut).
    most_resent: u64,
}

struct Net {
    sshd: Sshd,
    minio: S3Server,
    _http: HttpServer,
    proxies: BTreeMap<&'static str, CuttingProxy>,
}

impl Net {
    fn proxy(&self, t: Transport) -> &CuttingProxy {
        &self.proxies[match t {
            Transport::Http => "http",
            Transport::Ssh => "ssh",
            Transport::Bucket => "s3",
        }]
    }

    /// The URL of hub `name` (a folder under `root`; a prefix in the bucket), through the proxy.
    fn url(&self, t: Transport, root: &Path, name: &str) -> String {
        let port = self.proxy(t).port;
        match t {
            Transport::Http => format!("http://127.0.0.1:{port}/{name}"),
            Transport::Ssh => self
                .sshd
                .url(&root.join(name))
                .replace(&format!(":{}/", self.sshd.port), &format!(":{port}/")),
            Transport::Bucket => format!("s3://cuts/{name}"),
        }
    }

    fn command(&self, t: Transport, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = dmv_cmd(dir);
        cmd.args(args);
        match t {
            Transport::Http => {
                cmd.env("DMV_TOKEN", "w");
            }
            Transport::Ssh => self.sshd.env(&mut cmd),
            Transport::Bucket => {
                self.minio.env(&mut cmd);
                cmd.env(
                    "AWS_ENDPOINT_URL",
                    format!("http://127.0.0.1:{}", self.proxy(t).port),
                );
            }
        }
        cmd
    }

    /// Runs `args`, the proxy cutting each connection after `cut` bytes; returns the output and the bytes it carried.
    fn run(&self, t: Transport, dir: &Path, args: &[&str], cut: Option<u64>) -> (Output, u64) {
        let proxy = self.proxy(t);
        proxy.cut_after(cut);
        let before = proxy.carried();
        let out = self.command(t, dir, args).output().unwrap();
        (out, proxy.carried() - before)
    }
}

/// `dir` holds five 6 MiB files in one commit, in packs of [`PACK`].
fn source(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    dmv(dir, &["init"]);
    set_pack_limit(dir);
    for i in 0..5 {
        write_noise(&dir.join(format!("reel{i}.raw")), 6 * MIB, 10 + i);
    }
    commit_all(dir, "reels");
}

/// The hubs one transport uses: `h0` whole, `h1`… each cut once. The HTTP
/// server serves the folders it was started with, so all are made first.
fn hub_name(t: Transport, k: u64) -> String {
    format!("{t:?}-h{k}").to_lowercase()
}

fn make_hubs(root: &Path, places: u64) -> String {
    let mut config = "[repos]\n".to_string();
    for t in [Transport::Http, Transport::Ssh] {
        for k in 0..=places {
            let name = hub_name(t, k);
            dmv(root, &["init", "--bare", &name]);
            set_pack_limit(&root.join(&name));
            config.push_str(&format!("{name} = \"hubs/{name}\"\n"));
        }
    }
    config + "[tokens]\n\"w\" = \"write\"\n"
}

#[test]
fn cut_pushes_and_clones_fail_in_one_line_and_resume_resending_at_most_a_pack() {
    if lacks(&[Need::Sshd, Need::Minio]) {
        return;
    }
    let full = std::env::var("DMV_CUTS").is_ok_and(|v| v == "full");
    let places: u64 = if full { 17 } else { 2 };
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("hubs");
    std::fs::create_dir(&root).unwrap();
    let src = top.path().join("src");
    source(&src);
    let sshd = Sshd::start();
    let minio = S3Server::minio();
    minio.create_bucket("cuts");
    let http = HttpServer::start(&make_hubs(&root, places), top.path(), 0);
    let minio_port: u16 = minio
        .endpoint()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let proxies = BTreeMap::from([
        ("http", CuttingProxy::start(http.port)),
        ("ssh", CuttingProxy::start(sshd.port)),
        ("s3", CuttingProxy::start(minio_port)),
    ]);
    let net = Net {
        sshd,
        minio,
        _http: http,
        proxies,
    };
    let seed: u64 = std::env::var("DMV_CUTS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("cut offsets drawn with DMV_CUTS_SEED={seed}");
    let mut rng = seed | 1;
    // The k-th of `places` cuts of a transfer of `whole` bytes: somewhere in
    // the k-th of `places + 1` slices (the last one holds the answers that
    // end a transfer: cut there, a push may have landed before its client knew).
    let mut cut_at = |whole: u64, k: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let slice = (whole / (places + 1)).max(1);
        slice * (k - 1) + 1 + rng % slice
    };
    let mut report: BTreeMap<String, Cuts> = BTreeMap::new();
    let mut n = 0;
    for t in [Transport::Http, Transport::Ssh, Transport::Bucket] {
        let pack = if t == Transport::Bucket {
            BUCKET_PACK
        } else {
            PACK
        };
        // Slack: protocol and, over ssh, encryption; and a window of data in flight.
        let slack = |bytes: u64| bytes / 10 + 4 * MIB;

        // Pushes.
        let whole_hub = net.url(t, &root, &hub_name(t, 0));
        let (out, whole) = net.run(t, &src, &["push", &whole_hub, "main"], None);
        assert!(out.status.success(), "{t:?}: {}", stderr(&out));
        let push = report.entry(format!("push over {t:?}")).or_default();
        push.whole = whole;
        for k in 1..=places {
            let name = hub_name(t, k);
            let url = net.url(t, &root, &name);
            let cut = cut_at(whole, k);
            let (out, _) = net.run(t, &src, &["push", &url, "main"], Some(cut));
            // Object storage retries a cut request on a new connection (each one is cut again later): it may get through.
            if t != Transport::Bucket || !out.status.success() {
                assert!(
                    !out.status.success(),
                    "{t:?}: a push cut after {cut} of {whole} bytes succeeded"
                );
                one_line_error(&out);
            }
            if t != Transport::Bucket {
                fsck_clean(&root.join(&name));
                assert_eq!(
                    head_of(&root.join(&name), "refs/heads/main"),
                    "",
                    "{t:?}: a ref moved to a half-sent commit"
                );
            }
            let (out, again) = net.run(t, &src, &["push", &url, "main"], None);
            assert!(
                out.status.success(),
                "{t:?}: the push after a cut at {cut}: {}",
                stderr(&out)
            );
            assert!(
                cut + again <= whole + pack + slack(whole),
                "{t:?}: a push cut at {cut} of {whole} bytes sent {again} again"
            );
            push.cuts += 1;
            push.largest_rerun = push.largest_rerun.max(again);
            push.most_resent = push.most_resent.max((cut + again).saturating_sub(whole));
        }

        // Clones of the whole hub.
        let url = whole_hub;
        n += 1;
        let (out, whole) = net.run(
            t,
            top.path(),
            &["clone", &url, &format!("clone-whole-{n}")],
            None,
        );
        assert!(out.status.success(), "{t:?}: {}", stderr(&out));
        let clone = report.entry(format!("clone over {t:?}")).or_default();
        clone.whole = whole;
        for k in 1..=places {
            n += 1;
            let dest = format!("clone-{n}");
            let cut = cut_at(whole, k);
            let (out, _) = net.run(t, top.path(), &["clone", &url, &dest], Some(cut));
            let finished = out.status.success();
            if t != Transport::Bucket || !finished {
                assert!(
                    !finished,
                    "{t:?}: a clone cut after {cut} of {whole} bytes succeeded"
                );
                one_line_error(&out);
            }
            let (out, again) = match finished {
                true => (out, 0),
                false => net.run(t, top.path(), &["clone", &url, &dest], None),
            };
            assert!(
                out.status.success(),
                "{t:?}: the clone after a cut at {cut}: {}",
                stderr(&out)
            );
            // What arrived before the cut is kept (sealed as the clone fails), not a pack's worth lost.
            assert!(
                cut + again <= whole + slack(whole),
                "{t:?}: a clone cut at {cut} of {whole} bytes received {again} again"
            );
            let d = top.path().join(&dest);
            fsck_clean(&d);
            assert!(
                std::fs::read(d.join("reel4.raw")).unwrap()
                    == std::fs::read(src.join("reel4.raw")).unwrap()
            );
            clone.cuts += 1;
            clone.largest_rerun = clone.largest_rerun.max(again);
            clone.most_resent = clone.most_resent.max((cut + again).saturating_sub(whole));
        }
    }
    if let Ok(dir) = std::env::var("DMV_FAULTS_REPORT_DIR") {
        std::fs::write(
            Path::new(&dir).join("cuts.json"),
            serde_json::to_vec_pretty(&report).unwrap(),
        )
        .unwrap();
    }
    let total: u64 = report.values().map(|c| c.cuts).sum();
    assert!(total >= if full { 100 } else { 12 }, "{total} cuts");
}
