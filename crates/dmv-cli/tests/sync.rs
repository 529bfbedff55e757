//! Replicas talking to each other over a local path, a real sshd and a real
//! `dmv serve` on loopback: what arrives, how many bytes travel, and what
//! happens when a transfer is cut or two pushes race.

use crate::common;
use common::needs::{lacks, Need};
use common::remote::*;
use common::servers::{HttpServer, Sshd};
use common::*;

use std::os::unix::fs::FileExt;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// A refused push over a path says why in one line (dmv-sync's
/// tests/exchanges.rs checks what arrives and that nothing moves).
#[test]
fn clone_push_fetch_over_a_path_with_fast_forward_and_lease_checks() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("notes.txt"), "day one\n").unwrap();
    commit_all(&a, "day one");
    dmv(t, &["init", "--bare", "hub"]);
    dmv(&a, &["remote", "add", "origin", "../hub"]);
    dmv(&a, &["push"]);
    dmv(t, &["clone", "hub", "b"]);
    let b = t.join("b");
    assert!(
        dmv(&b, &["status", "--short"]).is_empty(),
        "a fresh clone is clean"
    );
    std::fs::write(b.join("notes.txt"), "day one, edited in b\n").unwrap();
    commit_all(&b, "edit in b");
    dmv(&b, &["push"]);
    std::fs::write(a.join("other.txt"), "from a\n").unwrap();
    commit_all(&a, "a's own work");
    let out = dmv_out(&a, &["push"]);
    assert!(one_line_error(&out).contains("pull"));
    let out = dmv_out(&a, &["push", "--force"]);
    assert!(one_line_error(&out).contains("moved since your last fetch"));
    dmv(&a, &["fetch"]);
    dmv(&a, &["push", "--force"]);
    dmv(&b, &["remote", "add", "peer", "../a"]);
    dmv(&b, &["fetch", "peer"]);
    let out = dmv_out(&b, &["push", "--force", "peer"]);
    let line = one_line_error(&out);
    assert!(line.contains("checked-out branch"), "{line}");
}

/// With AES instructions and no cipher configured, an ssh remote asks for
/// AES-GCM first (ssh's CPU is what limits a fast link); a cipher the user
/// chose (here with `-c`, as ssh_config would) is kept.
#[test]
fn ssh_prefers_aes_gcm_unless_a_cipher_is_configured() {
    if lacks(&[Need::Sshd]) {
        return;
    }
    let sshd = Sshd::start();
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("note.txt"), "hello\n").unwrap();
    commit_all(&a, "one");
    let cipher_of_clone = |dest: &str, extra: &str| {
        let log = t.join(format!("{dest}.ssh.log"));
        let ssh = format!(
            "{} -E {} {extra}",
            sshd.ssh_command()
                .replace("LogLevel=ERROR", "LogLevel=DEBUG1"),
            log.display()
        );
        let out = dmv_cmd(t)
            .args(["clone", &sshd.url(&a), dest])
            .env("DMV_REMOTE_DMV", bin())
            .env("DMV_SSH", ssh)
            .output()
            .unwrap();
        ok(&out);
        let text = std::fs::read_to_string(&log).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains("kex: server->client cipher:"))
            .unwrap_or_else(|| panic!("no cipher in {text}"));
        line.split("cipher: ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let has = |f: &str| {
        flags.lines().any(|l| {
            (l.starts_with("flags") || l.starts_with("Features"))
                && l.split_whitespace().any(|w| w == f)
        })
    };
    let aes =
        (has("aes") && (has("pclmulqdq") || has("pmull"))).then_some("aes128-gcm@openssh.com");
    assert_eq!(
        cipher_of_clone("b", ""),
        aes.unwrap_or("chacha20-poly1305@openssh.com")
    );
    assert_eq!(cipher_of_clone("c", "-c aes256-ctr"), "aes256-ctr");
}

#[test]
fn ssh_push_sends_only_what_changed_in_a_1_gib_file() {
    if lacks(&[Need::Sshd]) {
        return;
    }
    let sshd = Sshd::start();
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    dmv(t, &["init", "--bare", "hub"]);
    let a = t.join("a");
    let big = a.join("take.mov");
    write_noise(&big, 1024 * MIB, 7);
    commit_all(&a, "1 GiB take");
    let url = sshd.url(&t.join("hub"));
    dmv(&a, &["remote", "add", "origin", &url]);
    let (out, sent, _) = traced(&a, &["push"], |c| sshd.env(c));
    ok(&out);
    assert!(
        sent > 1024 * MIB && sent < 1030 * MIB,
        "first push sent {sent}"
    );

    // Change 1 MiB in the middle: the push sends the changed chunks and a few nodes.
    let f = std::fs::OpenOptions::new().write(true).open(&big).unwrap();
    f.write_all_at(&Noise::new(99).bytes(MIB as usize), 512 * MIB)
        .unwrap();
    drop(f);
    commit_all(&a, "regraded");
    let (out, sent, _) = traced(&a, &["push"], |c| sshd.env(c));
    ok(&out);
    assert!(sent < 2 * MIB, "a 1 MiB change sent {sent} bytes");
    let (out, sent, received) = traced(&a, &["push"], |c| sshd.env(c));
    ok(&out);
    assert!(stderr(&out).contains("Everything up to date"));
    assert!(
        sent + received < 16 << 10,
        "a no-op push moved {sent} + {received} bytes"
    );

    // Clone back over ssh; the content is exact.
    let mut cmd = dmv_cmd(t);
    cmd.args(["clone", &url, "c"]);
    sshd.env(&mut cmd);
    ok(&cmd.output().unwrap());
    let c = t.join("c");
    let (x, y) = (
        std::fs::File::open(&big).unwrap(),
        std::fs::File::open(c.join("take.mov")).unwrap(),
    );
    let mut bx = vec![0u8; 4 * MIB as usize];
    let mut by = bx.clone();
    for off in (0..1024 * MIB).step_by(4 * MIB as usize) {
        x.read_exact_at(&mut bx, off).unwrap();
        y.read_exact_at(&mut by, off).unwrap();
        assert!(bx == by, "clone differs at {off}");
    }
    fsck_clean(&t.join("hub"));
    fsck_clean(&c);
}

#[test]
fn http_clone_sends_shared_chunks_once_and_enforces_tokens() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    // Two 8 MiB files sharing 90 % of their bytes.
    let base = Noise::new(3).bytes(8 * MIB as usize);
    let mut variant = base.clone();
    variant[..(8 * MIB / 10) as usize]
        .copy_from_slice(&Noise::new(4).bytes((8 * MIB / 10) as usize));
    std::fs::write(a.join("v1.wav"), &base).unwrap();
    std::fs::write(a.join("v2.wav"), &variant).unwrap();
    commit_all(&a, "two takes");
    dmv(t, &["init", "--bare", "hub"]);
    dmv(&a, &["push", "../hub"]);
    let mut server = HttpServer::start("read = \"token\"\n[repos]\nphotos = \"hub\"\n[tokens]\n\"reader-1\" = \"read\"\n\"writer-1\" = \"write\"\n", t, 0);
    let url = server.url("photos");

    // Reading needs a token here: 401 without, 403 with a wrong one, and nothing is created.
    let out = dmv_out(t, &["clone", &url, "nope"]);
    assert!(one_line_error(&out).contains("authentication failed"));
    let out = dmv_cmd(t)
        .args(["clone", &url, "nope"])
        .env("DMV_TOKEN", "guess")
        .output()
        .unwrap();
    assert!(one_line_error(&out).contains("not valid"));
    assert!(!t.join("nope").exists());

    let (out, _, received) = traced(t, &["clone", "--token", "reader-1", &url, "b"], |_| {});
    ok(&out);
    let b = t.join("b");
    assert_eq!(std::fs::read(b.join("v2.wav")).unwrap(), variant);
    let unique = 8 * MIB + 8 * MIB / 10;
    assert!(
        received < unique + 2 * 256 * 1024 + 256 * 1024,
        "clone received {received} bytes for {unique} unique"
    );

    // Pushing needs a write token; a read token gets 403 and the ref does not move.
    std::fs::write(b.join("v3.wav"), b"new take").unwrap();
    commit_all(&b, "third");
    let before = head_of(&t.join("hub"), "refs/heads/main");
    let out = dmv_out(&b, &["push"]);
    let line = one_line_error(&out);
    assert!(line.contains("may read but not write"), "{line}");
    assert_eq!(head_of(&t.join("hub"), "refs/heads/main"), before);
    let out = dmv_cmd(&b)
        .args(["push"])
        .env("DMV_TOKEN", "writer-1")
        .output()
        .unwrap();
    ok(&out);
    assert_eq!(
        head_of(&t.join("hub"), "refs/heads/main"),
        head_of(&b, "refs/heads/main")
    );
    server.kill();
    fsck_clean(&t.join("hub"));
}

#[test]
fn interrupted_clone_and_push_resume_resending_at_most_one_pack() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    for i in 0..4 {
        write_noise(&a.join(format!("reel{i}.bin")), 40 * MIB, 20 + i);
    }
    commit_all(&a, "four reels");
    let total = 160 * MIB;
    let pack = 64 * MIB;

    // Client killed after 100 MiB: one 64 MiB pack had landed.
    let out = dmv_cmd(t)
        .args(["clone", "a", "b"])
        .env("DMV_ABORT_AFTER_BYTES", (100 * MIB).to_string())
        .output()
        .unwrap();
    assert!(!out.status.success());
    fsck_clean(&t.join("b"));
    let worktree: Vec<_> = std::fs::read_dir(t.join("b"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != ".dmv")
        .collect();
    assert!(
        worktree.is_empty(),
        "files written while receiving appear only once the fetch is done: {worktree:?}"
    );
    let (out, _, received) = traced(t, &["clone", "a", "b"], |_| {});
    ok(&out);
    assert!(stderr(&out).contains("Resuming"));
    assert!(!t.join("b/.dmv/early-checkout").exists());
    assert!(
        100 * MIB + received <= total + pack + MIB,
        "resent too much: {} + {received}",
        100 * MIB
    );
    assert!(
        received < total - pack + 2 * MIB,
        "nothing was kept: received {received}"
    );
    let b = t.join("b");
    assert_eq!(
        std::fs::read(b.join("reel3.bin")).unwrap(),
        std::fs::read(a.join("reel3.bin")).unwrap()
    );
    fsck_clean(&b);

    // A push over HTTP whose client dies half way, then one whose server dies.
    dmv(t, &["init", "--bare", "hub"]);
    let mut server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
        t,
        0,
    );
    let url = server.url("hub");
    let out = dmv_cmd(&a)
        .args(["push", &url])
        .env("DMV_TOKEN", "w")
        .env("DMV_ABORT_AFTER_BYTES", (100 * MIB).to_string())
        .output()
        .unwrap();
    assert!(!out.status.success());
    fsck_clean(&t.join("hub"));
    assert_eq!(
        head_of(&t.join("hub"), "refs/heads/main"),
        "",
        "no ref may point at a half-sent commit"
    );
    let (out, sent, _) = traced(&a, &["push", &url], |c| {
        c.env("DMV_TOKEN", "w");
    });
    ok(&out);
    assert!(
        100 * MIB + sent <= total + pack + MIB,
        "push resent too much: {sent}"
    );

    // The server dies mid-push: the client says so in one line, the retry completes.
    std::fs::write(
        a.join("reel4.bin"),
        Noise::new(44).bytes(100 * MIB as usize),
    )
    .unwrap();
    commit_all(&a, "fifth reel");
    let push = dmv_cmd(&a)
        .args(["push", &url])
        .env("DMV_TOKEN", "w")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let packs = t.join("hub/.dmv/objects/packs");
    let count_packs = || {
        std::fs::read_dir(&packs)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".idx")
            })
            .count()
    };
    let before = count_packs();
    let start = std::time::Instant::now();
    while count_packs() == before && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    server.kill();
    let out = push.wait_with_output().unwrap();
    if !out.status.success() {
        let line = one_line_error(&out);
        assert!(line.contains("lost") || line.contains("reach"), "{line}");
    }
    fsck_clean(&t.join("hub"));
    let server = HttpServer::start_with(&server.config.clone(), 0);
    let out = dmv_cmd(&a)
        .args(["push", &server.url("hub")])
        .env("DMV_TOKEN", "w")
        .output()
        .unwrap();
    ok(&out);
    assert_eq!(
        head_of(&t.join("hub"), "refs/heads/main"),
        head_of(&a, "refs/heads/main")
    );
    fsck_clean(&t.join("hub"));
}

#[test]
fn of_two_concurrent_pushes_exactly_one_wins() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "seed"]);
    std::fs::write(t.join("seed/readme"), "start\n").unwrap();
    commit_all(&t.join("seed"), "start");
    dmv(t, &["init", "--bare", "hub"]);
    dmv(&t.join("seed"), &["push", "../hub"]);
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
        t,
        0,
    );
    let url = server.url("hub");
    for name in ["x", "y"] {
        dmv(t, &["clone", "hub", name]);
        dmv(&t.join(name), &["remote", "remove", "origin"]);
        dmv(&t.join(name), &["remote", "add", "origin", &url]);
    }
    for round in 0..4 {
        for name in ["x", "y"] {
            let d = t.join(name);
            ok(&dmv_cmd(&d)
                .args(["pull"])
                .env("DMV_TOKEN", "w")
                .output()
                .unwrap());
            write_noise(
                &d.join(format!("{name}-{round}.bin")),
                2 * MIB,
                round * 10 + name.len() as u64 + name.as_bytes()[0] as u64,
            );
            commit_all(&d, &format!("{name} round {round}"));
        }
        let spawn = |name: &str| {
            dmv_cmd(&t.join(name))
                .args(["push"])
                .env("DMV_TOKEN", "w")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (px, py) = (spawn("x"), spawn("y"));
        let (ox, oy) = (
            px.wait_with_output().unwrap(),
            py.wait_with_output().unwrap(),
        );
        assert!(
            ox.status.success() != oy.status.success(),
            "round {round}: exactly one push must win: x {:?} {} / y {:?} {}",
            ox.status,
            stderr(&ox),
            oy.status,
            stderr(&oy)
        );
        let (winner, loser) = if ox.status.success() {
            ("x", oy)
        } else {
            ("y", ox)
        };
        assert!(
            one_line_error(&loser).contains("pull"),
            "the loser is told to pull: {}",
            stderr(&loser)
        );
        assert_eq!(
            head_of(&t.join("hub"), "refs/heads/main"),
            head_of(&t.join(winner), "refs/heads/main")
        );
    }
    // The losers' commits were merged by their next pull: after a last pull and push, no update is lost.
    for name in ["x", "y"] {
        let d = t.join(name);
        ok(&dmv_cmd(&d)
            .args(["pull"])
            .env("DMV_TOKEN", "w")
            .output()
            .unwrap());
        ok(&dmv_cmd(&d)
            .args(["push"])
            .env("DMV_TOKEN", "w")
            .output()
            .unwrap());
    }
    let log = dmv(&t.join("hub"), &["log", "--oneline"]);
    for round in 0..4 {
        for name in ["x", "y"] {
            assert!(
                log.contains(&format!("{name} round {round}")),
                "{name} round {round} lost:\n{log}"
            );
        }
    }
    fsck_clean(&t.join("hub"));
}

#[test]
fn unreachable_wrong_and_mismatched_remotes_fail_in_one_line() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    std::fs::write(t.join("a/f"), "x").unwrap();
    commit_all(&t.join("a"), "one");
    let a = t.join("a");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let line = one_line_error(&dmv_out(
        &a,
        &["fetch", &format!("http://127.0.0.1:{closed}/x")],
    ));
    assert!(line.contains("cannot reach"), "{line}");
    let mut cmd = dmv_cmd(&a);
    cmd.args(["fetch", &format!("ssh://127.0.0.1:{closed}/x")])
        .env(
            "DMV_SSH",
            "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
        );
    let line = one_line_error(&cmd.output().unwrap());
    assert!(
        line.contains("cannot reach") && line.contains("refused"),
        "{line}"
    );
    let line = one_line_error(&dmv_out(&a, &["fetch", t.to_str().unwrap()]));
    assert!(line.contains("not a dmv repository"), "{line}");
    let line = one_line_error(
        &dmv_cmd(&a)
            .args(["clone", "../a", "../z"])
            .env("DMV_TEST_PROTOCOL_VERSION", "99")
            .output()
            .unwrap(),
    );
    assert!(line.contains("protocol 99"), "{line}");
    assert!(!t.join("z").exists());
    let line = one_line_error(&dmv_out(&a, &["push", "nowhere"]));
    assert!(line.contains("no remote named nowhere"), "{line}");
    let line = one_line_error(&dmv_out(t, &["clone", "a", "a"]));
    assert!(line.contains("not empty"), "{line}");
}

/// A damaged chunk in the source's pack stops the clone with one line
/// pointing at the remote. What is refused and that nothing is stored is
/// tested through the library in dmv-sync's tests/exchanges.rs.
#[test]
fn clone_of_a_damaged_repository_says_so_in_one_line() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    write_noise(&t.join("a/clip.mov"), 4 * MIB, 3);
    commit_all(&t.join("a"), "clip");
    let packs = t.join("a/.dmv/objects/packs");
    let pack = std::fs::read_dir(&packs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&pack)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, 2 * MIB).unwrap();
    f.write_all_at(&[b[0] ^ 0x10], 2 * MIB).unwrap();
    drop(f);

    // (That its serving child then ends on its own, not killed after a
    // grace, is dmv-sync's transport/stdio.rs test.)
    let out = dmv_out(t, &["clone", "a", "b"]);
    let line = one_line_error(&out);
    assert!(
        line.contains("damaged") && line.contains("dmv fsck"),
        "{line}"
    );
}

fn written_while_receiving(out: &std::process::Output) -> u64 {
    let err = stderr(out);
    let line = err
        .lines()
        .find(|l| l.starts_with("trace: files-written-while-receiving"))
        .unwrap_or_else(|| panic!("no trace line in: {err}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// A clone writes large files as their chunks arrive (one pass over the data
/// instead of storing and reading back) when they arrive in order, and falls
/// back to the normal checkout for the others; either way the result is
/// exact: content, exec bit, clean status, nothing left in `.dmv`.
#[test]
fn clone_writes_large_files_while_receiving_and_falls_back_exactly() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    write_noise(&a.join("take1.mov"), 8 * MIB, 41);
    std::fs::create_dir(a.join("tools")).unwrap();
    write_noise(&a.join("tools/render.sh"), 3 * MIB, 42);
    std::fs::set_permissions(
        a.join("tools/render.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(a.join("silence.raw"), vec![0u8; 4 * MIB as usize]).unwrap(); // one chunk, repeated
    std::fs::write(a.join("notes.txt"), "small files take the normal path\n").unwrap();
    commit_all(&a, "first");

    let (out, _, _) = traced(t, &["clone", "a", "b"], |_| {});
    ok(&out);
    assert_eq!(
        written_while_receiving(&out),
        3,
        "the three large files arrive in order"
    );
    let b = t.join("b");
    for f in ["take1.mov", "tools/render.sh", "silence.raw", "notes.txt"] {
        assert!(
            std::fs::read(b.join(f)).unwrap() == std::fs::read(a.join(f)).unwrap(),
            "{f} differs"
        );
    }
    use std::os::unix::fs::PermissionsExt;
    assert_ne!(
        std::fs::metadata(b.join("tools/render.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0
    );
    assert_eq!(
        std::fs::metadata(b.join("take1.mov"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0
    );
    assert!(
        dmv(&b, &["status", "--short"]).is_empty(),
        "a fresh clone is clean"
    );
    assert!(!b.join(".dmv/early-checkout").exists());
    fsck_clean(&b);

    // History, and a trimmed copy that comes first in the tree: most of
    // take1.mov's chunks arrive for the trimmed copy before take1.mov's own
    // first ones, so take1.mov is checked out from the store instead.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(a.join("take1.mov"))
        .unwrap();
    f.write_all_at(&Noise::new(43).bytes(MIB as usize), 3 * MIB)
        .unwrap();
    std::fs::write(
        a.join("take1-trimmed.mov"),
        &std::fs::read(a.join("take1.mov")).unwrap()[MIB as usize..],
    )
    .unwrap();
    commit_all(&a, "second");
    let (out, _, _) = traced(t, &["clone", "a", "c"], |_| {});
    ok(&out);
    let c = t.join("c");
    for f in [
        "take1.mov",
        "take1-trimmed.mov",
        "tools/render.sh",
        "silence.raw",
        "notes.txt",
    ] {
        assert!(
            std::fs::read(c.join(f)).unwrap() == std::fs::read(a.join(f)).unwrap(),
            "{f} differs"
        );
    }
    assert_eq!(
        written_while_receiving(&out),
        3,
        "all large files but take1.mov"
    );
    assert!(dmv(&c, &["status", "--short"]).is_empty());
    assert_eq!(dmv(&c, &["log", "--oneline"]).lines().count(), 2);
    fsck_clean(&c);

    // A bare clone has no working tree to write.
    let (out, _, _) = traced(t, &["clone", "--bare", "a", "d"], |_| {});
    ok(&out);
    assert!(!stderr(&out).contains("files-written-while-receiving"));
}

/// Leaves the clone `b` of `a` as a kill during its checkout would: the
/// marker and the files, no dirstate, no branch.
fn stop_as_if_killed_during_checkout(a: &Path, b: &Path) {
    std::fs::remove_file(b.join(".dmv/dirstate")).unwrap();
    let mut del = dmv_cmd(b);
    del.args(["update-ref", "--stdin"])
        .stdin(std::process::Stdio::piped());
    let mut child = del.spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"delete refs/heads/main\n").unwrap();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    std::fs::write(
        b.join(".dmv/clone-in-progress"),
        format!("{}\n", a.canonicalize().unwrap().display()),
    )
    .unwrap();
}

/// A checkout that meets a damaged chunk halfway through many files stops
/// with one line naming the object, whichever thread met it.
#[test]
fn a_checkout_of_many_files_meeting_a_damaged_chunk_stops_with_one_line() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    for i in 0..600 {
        std::fs::create_dir_all(a.join(format!("d{}", i / 100))).unwrap();
        std::fs::write(
            a.join(format!("d{}/f{i}", i / 100)),
            format!("file number {i} with some words to fill it\n"),
        )
        .unwrap();
    }
    commit_all(&a, "many");
    dmv(t, &["clone", "a", "b"]);
    let b = t.join("b");
    stop_as_if_killed_during_checkout(&a, &b);
    for entry in std::fs::read_dir(&b).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name().unwrap() != ".dmv" {
            std::fs::remove_dir_all(p).unwrap();
        }
    }
    // Damage the stored copy of one file of the middle directory.
    let needle = b"file number 345 with some words";
    let pack = std::fs::read_dir(b.join(".dmv/objects/packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.extension().is_some_and(|e| e == "pack")
                && std::fs::read(p)
                    .unwrap()
                    .windows(needle.len())
                    .any(|w| w == needle)
        });
    let pack = pack.expect("small files are stored uncompressed here");
    let mut bytes = std::fs::read(&pack).unwrap();
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    bytes[at] ^= 0x40;
    std::fs::write(&pack, bytes).unwrap();

    let out = dmv_out(t, &["clone", "a", "b"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    let errors: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.starts_with("dmv: "))
        .map(String::from)
        .collect();
    assert!(
        errors.len() == 1 && errors[0].contains("does not hash to its id"),
        "{}",
        stderr(&out)
    );
    assert!(
        !b.join("d3/f345").exists(),
        "a damaged file must not be written out"
    );
}

/// What a sync prints when it merges, and its exit code when it stops on
/// a conflict (dmv-sync's tests/exchanges.rs checks what it merges and
/// pushes).
#[test]
fn sync_merges_then_pushes_and_stops_on_conflicts() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("shared.txt"), "shared\n").unwrap();
    commit_all(&a, "first");
    dmv(t, &["init", "--bare", "hub"]);
    dmv(&a, &["remote", "add", "origin", "../hub"]);
    dmv(&a, &["push"]);
    dmv(t, &["clone", "hub", "b"]);
    let b = t.join("b");
    std::fs::write(a.join("from-a.txt"), "a\n").unwrap();
    commit_all(&a, "a's work");
    dmv(&a, &["push"]);
    std::fs::write(b.join("from-b.txt"), "b\n").unwrap();
    commit_all(&b, "b's work");
    let out = dmv_out(&b, &["sync"]);
    ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Merged origin/main"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    ok(&dmv_out(&a, &["sync"]));
    std::fs::write(a.join("from-a.txt"), "a again\n").unwrap();
    commit_all(&a, "a edits");
    dmv(&a, &["push"]);
    std::fs::write(b.join("from-a.txt"), "b's take\n").unwrap();
    commit_all(&b, "b edits");
    let out = dmv_out(&b, &["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CONFLICT"));
}

/// A sync killed at each step of its merge, then run again after the
/// remote moved on, finishes or undoes what was cut short and converges
/// without a person typing: one killed sync in fourteen had left a merge
/// that every later sync refused ("a merge of origin/main is already in
/// progress") until someone ran `merge --abort`.
#[test]
fn a_sync_killed_in_its_merge_is_mended_by_the_next_sync() {
    for point in [
        "merge-state-written",
        "merge-worktree-written",
        "commit-before-ref",
        "commit-after-ref",
    ] {
        let top = tempfile::tempdir().unwrap();
        let t = top.path();
        dmv(t, &["init", "a"]);
        let a = t.join("a");
        write_noise(&a.join("shared.raw"), MIB, 5);
        commit_all(&a, "first");
        dmv(t, &["init", "--bare", "hub"]);
        dmv(&a, &["remote", "add", "origin", "../hub"]);
        dmv(&a, &["push"]);
        dmv(t, &["clone", "hub", "b"]);
        let b = t.join("b");
        write_noise(&b.join("from-b.raw"), MIB, 6);
        commit_all(&b, "b's work");
        dmv(&b, &["push"]);
        write_noise(&a.join("from-a.raw"), MIB, 7);
        commit_all(&a, "a's work");
        let out = dmv_cmd(&a)
            .args(["sync"])
            .env("DMV_FAILPOINT", point)
            .output()
            .unwrap();
        assert!(
            !out.status.success() && stderr(&out).contains(&format!("failpoint {point} reached")),
            "{point}: {}",
            stderr(&out)
        );
        // The hub moves on before the next sync.
        write_noise(&b.join("later-b.raw"), MIB, 8);
        commit_all(&b, "b's later work");
        dmv(&b, &["push"]);
        let out = dmv_out(&a, &["sync"]);
        ok(&out);
        let said = String::from_utf8_lossy(&out.stdout);
        let expected = match point {
            "merge-state-written" | "merge-worktree-written" => {
                Some("Undid the merge of origin/main a sync left cut short")
            }
            "commit-before-ref" => Some("Committed the merge of origin/main a sync left cut short"),
            _ => None,
        };
        assert!(
            expected.is_none_or(|line| said.contains(line)),
            "{point}: {said}"
        );
        let head = head_of(&a, "refs/heads/main");
        assert_eq!(
            head_of(&t.join("hub"), "refs/heads/main"),
            head,
            "{point}: the merge was pushed"
        );
        assert_eq!(
            dmv(&a, &["status", "--short"]),
            "",
            "{point}: nothing left over"
        );
        for name in ["from-a.raw", "from-b.raw", "later-b.raw"] {
            assert!(a.join(name).exists(), "{point}: {name}");
        }
        fsck_clean(&a);
        ok(&dmv_out(&b, &["sync"]));
        assert_same_tree(&a, &b);
    }
}

/// A sync that reached only some remotes, or none, said "skipped" and
/// exited 0 (issue 42): it now fails, naming the remotes left out, after
/// doing what it could with the others.
#[test]
fn sync_fails_naming_the_remotes_it_could_not_reach() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("notes.txt"), "one\n").unwrap();
    commit_all(&a, "one");
    dmv(t, &["init", "--bare", "hub"]);
    dmv(&a, &["remote", "add", "origin", "../hub"]);
    dmv(&a, &["remote", "add", "gone", "http://127.0.0.1:1/hub"]);
    dmv(&a, &["push", "origin"]);
    std::fs::write(a.join("notes.txt"), "two\n").unwrap();
    commit_all(&a, "two");
    let out = dmv_out(&a, &["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let last = stderr(&out).lines().last().unwrap_or_default().to_string();
    assert!(
        last.contains("sync did not reach 1 of 2 remotes: gone"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        head_of(&t.join("hub"), "refs/heads/main"),
        head_of(&a, "refs/heads/main"),
        "the reachable remote was synced"
    );
    // None reachable: the same, and nothing claims success.
    dmv(&a, &["remote", "remove", "origin"]);
    let out = dmv_out(&a, &["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sync did not reach 1 of 1 remotes: gone"),
        "{}",
        stderr(&out)
    );
}

/// What `branch` lists in a clone, which branch follows which, and the
/// words of a switch or push that cannot be done. Making a branch from a
/// remote's, pushes to other names and deletions are tested through the
/// library in dmv-sync's tests/exchanges.rs.
#[test]
fn switch_makes_a_branch_only_a_remote_has_and_branch_lists_them_all() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("notes.txt"), "day one\n").unwrap();
    commit_all(&a, "day one");
    dmv(&a, &["switch", "-c", "incoming"]);
    std::fs::write(a.join("card.jpg"), "from the card").unwrap();
    commit_all(&a, "from the card");
    dmv(&a, &["switch", "main"]);
    dmv(t, &["clone", "a", "b"]);
    let b = t.join("b");
    assert_eq!(
        dmv(&b, &["branch"]),
        "* main\n",
        "only the clone's own branch"
    );
    assert!(
        dmv(&b, &["branch", "-vv"]).contains("[origin/main]"),
        "a clone's branch follows origin's"
    );
    let all = dmv(&b, &["branch", "-a", "-v"]);
    assert!(
        all.contains("remotes/origin/incoming") && all.contains("from the card"),
        "{all}"
    );
    dmv(&b, &["switch", "incoming"]);
    let none = dmv_out(&b, &["switch", "nowhere"]);
    assert!(
        !none.status.success() && stderr(&none).contains("no branch named 'nowhere'"),
        "{}",
        stderr(&none)
    );
    assert!(dmv(&b, &["branch", "-vv"]).contains("[origin/incoming]"));
    let bad = dmv_out(&b, &["push", "origin", "main:"]);
    assert!(
        !bad.status.success() && stderr(&bad).contains("cannot push 'main:'"),
        "{}",
        stderr(&bad)
    );
    dmv(&b, &["switch", "-c", "edits"]);
    dmv(&b, &["push", "-u", "origin", "edits:client-edits"]);
    assert!(dmv(&b, &["branch", "-vv"]).contains("[origin/client-edits]"));
}

/// A peer's work offered by `sync` to a laptop with a working tree waits
/// beside its checked-out branch, and `status` says so, in words and in
/// JSON. The ring of three converging is tested through the library in
/// dmv-sync's tests/exchanges.rs.
#[test]
fn a_peers_offer_waits_and_status_says_so() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let names = ["laptop-a", "laptop-b"];
    let dirs: Vec<_> = names.iter().map(|n| t.join(n)).collect();
    std::fs::create_dir(&dirs[0]).unwrap();
    dmv(&dirs[0], &["init"]);
    std::fs::write(dirs[0].join("shared.txt"), "from the start\n").unwrap();
    commit_all(&dirs[0], "start");
    dmv(
        t,
        &[
            "clone",
            dirs[0].to_str().unwrap(),
            dirs[1].to_str().unwrap(),
        ],
    );
    for (i, d) in dirs.iter().enumerate() {
        dmv(d, &["replica", "--name", names[i]]);
        dmv(
            d,
            &["remote", "add", "next", dirs[(i + 1) % 2].to_str().unwrap()],
        );
        write_noise(&d.join(format!("{}.raw", names[i])), 100_000, i as u64);
        commit_all(d, &format!("work on {}", names[i]));
    }
    ok(&dmv_out(&dirs[0], &["sync", "next"]));
    let said = dmv(&dirs[1], &["status"]);
    assert!(
        said.contains("laptop-a/main was offered by a peer and is not merged yet"),
        "{said}"
    );
    let said: serde_json::Value =
        serde_json::from_str(&dmv(&dirs[1], &["status", "--json"])).unwrap();
    assert_eq!(
        said["offers"],
        serde_json::json!([{"label": "laptop-a/main", "commit": head_of(&dirs[0], "main")}]),
    );
    ok(&dmv_out(&dirs[1], &["sync", "next"]));
    assert!(!dmv(&dirs[1], &["status"]).contains("was offered"));
}

/// Two peers offer their work to a third at the same moment while it runs
/// gc: both offers land (the compare-and-swaps are on different refs), gc
/// keeps what they refer to, and the third's next sync merges both.
#[test]
fn two_peers_offering_at_once_during_gc_lose_nothing() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let hub = t.join("desk");
    std::fs::create_dir(&hub).unwrap();
    dmv(&hub, &["init"]);
    std::fs::write(hub.join("start.txt"), "start\n").unwrap();
    commit_all(&hub, "start");
    let peers = ["laptop-b", "laptop-c"];
    for (i, p) in peers.iter().enumerate() {
        let d = t.join(p);
        dmv(t, &["clone", hub.to_str().unwrap(), d.to_str().unwrap()]);
        dmv(&d, &["replica", "--name", p]);
        write_noise(&d.join(format!("{p}.raw")), 3 << 20, 10 + i as u64);
        commit_all(&d, p);
    }
    for _ in 0..3 {
        let gc = dmv_cmd(&hub)
            .args(["gc"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let syncs: Vec<_> = peers
            .iter()
            .map(|p| {
                dmv_cmd(&t.join(p))
                    .args(["sync", "origin"])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in syncs.into_iter().chain([gc]) {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    for p in peers {
        assert_eq!(
            head_of(&hub, &format!("refs/remotes/{p}/main")),
            head_of(&t.join(p), "main")
        );
    }
    ok(&dmv_out(&hub, &["sync"]));
    for p in peers {
        assert_eq!(
            std::fs::read(hub.join(format!("{p}.raw"))).unwrap(),
            std::fs::read(t.join(p).join(format!("{p}.raw"))).unwrap()
        );
    }
    assert!(dmv(&hub, &["status", "--short"]).is_empty());
    fsck_clean(&hub);
}

/// `push --delete` and `push REMOTE :BRANCH` remove a hub's branch (a
/// reader's token may not: the server decides), and `fetch --prune` removes
/// the remote-tracking branches of branches gone from the hub.
#[test]
fn push_delete_removes_a_hub_branch_and_fetch_prune_forgets_it_elsewhere() {
    let t = tempfile::tempdir().unwrap();
    dmv(t.path(), &["init", "--bare", "hub"]);
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n\"r\" = \"read\"\n",
        t.path(),
        0,
    );
    let a = t.path().join("a");
    std::fs::create_dir(&a).unwrap();
    dmv(&a, &["init"]);
    std::fs::write(a.join("f.txt"), "f\n").unwrap();
    dmv(&a, &["add", "."]);
    dmv(&a, &["commit", "-m", "one"]);
    dmv(&a, &["branch", "topic"]);
    dmv(&a, &["branch", "scratch"]);
    dmv(
        &a,
        &[
            "remote",
            "add",
            "origin",
            &server.url("hub"),
            "--token",
            "w",
        ],
    );
    dmv(&a, &["push", "origin", "main", "topic", "scratch"]);
    dmv(
        t.path(),
        &["clone", "--token", "r", &server.url("hub"), "b"],
    );
    let b = t.path().join("b");
    assert!(dmv(&b, &["branch", "-a"]).contains("origin/topic"));

    // A reader's deletion is refused by the server, and nothing is gone.
    let out = dmv_out(&b, &["push", "--delete", "origin", "topic"]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    let hub = t.path().join("hub");
    assert!(dmv(&hub, &["branch"]).contains("topic"));

    let out = dmv_out(&a, &["push", "--delete", "origin", "topic"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(" - [deleted]         topic"),
        "{}",
        stderr(&out)
    );
    let out = dmv_out(&a, &["push", "origin", ":scratch"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = dmv(&hub, &["branch"]);
    assert!(
        !listed.contains("topic") && !listed.contains("scratch") && listed.contains("main"),
        "{listed}"
    );
    assert!(
        !dmv(&a, &["branch", "-a"]).contains("origin/topic"),
        "the pusher's tracking branch goes too"
    );
    let out = dmv_out(&a, &["push", "--delete", "origin", "nosuch"]);
    assert_eq!(out.status.code(), Some(128));

    // b still remembers them until it prunes.
    dmv(&b, &["fetch"]);
    assert!(dmv(&b, &["branch", "-a"]).contains("origin/topic"));
    let out = dmv_out(&b, &["fetch", "--prune"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("(none) -> origin/topic"),
        "{}",
        stderr(&out)
    );
    let branches = dmv(&b, &["branch", "-a"]);
    assert!(
        !branches.contains("origin/topic")
            && !branches.contains("origin/scratch")
            && branches.contains("origin/main"),
        "{branches}"
    );
}

/// An annotated tag (a tag object holding its commit, tagger and message)
/// travels by path, ssh and HTTP as git's does and keeps alive a commit no
/// branch reaches through gc on every side.
#[test]
fn annotated_tags_travel_over_every_remote_and_keep_their_commits() {
    if lacks(&[Need::Sshd]) {
        return;
    }
    let sshd = Sshd::start();
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    std::fs::write(a.join("take.wav"), Noise::new(7).bytes(300_000)).unwrap();
    commit_all(&a, "first take");
    // A commit only the tag will name: made on a branch that is then deleted.
    dmv(&a, &["switch", "-c", "side"]);
    std::fs::write(a.join("mix.wav"), Noise::new(8).bytes(200_000)).unwrap();
    commit_all(&a, "the mix");
    let mix = head_of(&a, "HEAD");
    dmv(
        &a,
        &[
            "tag",
            "-a",
            "v1",
            "-m",
            "Release one",
            "-m",
            "For the label.",
        ],
    );
    dmv(&a, &["switch", "main"]);
    dmv(&a, &["branch", "-D", "side"]);
    dmv(&a, &["tag", "plain"]);
    dmv(&a, &["gc", "--prune=now"]);
    fsck_clean(&a);
    let tag = dmv(&a, &["rev-parse", "v1"]).trim().to_string();
    assert_ne!(
        tag, mix,
        "rev-parse gives the tag object's id, as git's does"
    );
    assert_eq!(dmv(&a, &["rev-parse", "v1^{}"]).trim(), mix);
    assert_eq!(dmv(&a, &["rev-parse", "v1~0"]).trim(), mix);
    let shown = dmv(&a, &["show", "--stat", "v1"]);
    assert!(shown.starts_with("tag v1\nTagger: "), "{shown}");
    assert!(
        shown.contains("\n\nRelease one\n\nFor the label.\n\ncommit "),
        "{shown}"
    );
    assert_eq!(
        dmv(&a, &["tag", "-n"]),
        format!("{:<15} first take\n{:<15} Release one\n", "plain", "v1")
    );
    assert_eq!(
        dmv(&a, &["tag", "-n3", "v*"]),
        format!("{:<15} Release one\n\n{:<20}For the label.\n", "v1", "")
    );

    // By path: `push --tags` sends the tag object; the commit stays alive on the hub through gc.
    dmv(t, &["init", "--bare", "hub"]);
    let hub = t.join("hub");
    dmv(&a, &["remote", "add", "origin", "../hub"]);
    let out = dmv_out(&a, &["push", "origin", "main", "--tags"]);
    ok(&out);
    assert!(
        stderr(&out).contains(" * [new tag]         v1 -> v1"),
        "{}",
        stderr(&out)
    );
    dmv(&hub, &["gc", "--prune=now"]);
    fsck_clean(&hub);
    assert_eq!(dmv(&hub, &["rev-parse", "v1"]).trim(), tag);

    // By HTTP and by ssh: a clone has the tag, its message and its commit's files.
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
        t,
        0,
    );
    let mut ssh_clone = dmv_cmd(t);
    ssh_clone.args(["clone", &sshd.url(&hub), "c"]);
    sshd.env(&mut ssh_clone);
    ok(&ssh_clone.output().unwrap());
    ok(&dmv_cmd(t)
        .args(["clone", &server.url("hub"), "b"])
        .env("DMV_TOKEN", "w")
        .output()
        .unwrap());
    for r in ["b", "c"] {
        let r = t.join(r);
        assert_eq!(dmv(&r, &["rev-parse", "v1"]).trim(), tag);
        assert!(dmv(&r, &["tag", "-n"]).contains("v1              Release one"));
        dmv(&r, &["checkout", "v1"]);
        assert_eq!(
            std::fs::read(r.join("mix.wav")).unwrap(),
            Noise::new(8).bytes(200_000)
        );
        dmv(&r, &["gc", "--prune=now"]);
        fsck_clean(&r);
    }

    // A tag pushed by its name over HTTP, and fetched by another replica.
    let b = t.join("b");
    dmv(&b, &["switch", "main"]);
    std::fs::write(b.join("notes.txt"), "levels\n").unwrap();
    commit_all(&b, "notes");
    dmv(&b, &["tag", "-a", "v2", "-m", "Two"]);
    let out = dmv_cmd(&b)
        .args(["push", "origin", "main", "v2"])
        .env("DMV_TOKEN", "w")
        .output()
        .unwrap();
    ok(&out);
    assert!(
        stderr(&out).contains(" * [new tag]         v2 -> v2"),
        "{}",
        stderr(&out)
    );
    let out = dmv_out(&a, &["fetch"]);
    ok(&out);
    assert!(
        stderr(&out).contains("[new tag]         v2 -> v2"),
        "{}",
        stderr(&out)
    );
    assert_eq!(dmv(&a, &["rev-parse", "v2"]), dmv(&b, &["rev-parse", "v2"]));
    assert_eq!(dmv(&a, &["log", "--format=%s", "-1", "v2"]).trim(), "notes");

    // A tag's name as the source of a branch push stands for its commit.
    let out = dmv_cmd(&b)
        .args(["push", "origin", "v1:tagged"])
        .env("DMV_TOKEN", "w")
        .output()
        .unwrap();
    ok(&out);
    assert_eq!(head_of(&hub, "refs/heads/tagged"), mix);
    for r in [&a, &b, &hub] {
        fsck_clean(r);
    }
    drop(server);
}

/// A push of one changed file to a server gave back the replica's whole
/// location log, ~57 bytes a file per replica holding it (252 KB at
/// 1,100 files and four replicas): now only the records the server's
/// log lacked, counted here in bytes.
#[test]
fn a_push_gives_back_only_the_locations_the_server_lacked() {
    let top = tempfile::tempdir().unwrap();
    let t = top.path();
    dmv(t, &["init", "seed"]);
    let seed = t.join("seed");
    std::fs::create_dir(seed.join("assets")).unwrap();
    for i in 0..1000 {
        std::fs::write(
            seed.join(format!("assets/a{i:04}.bin")),
            format!("asset {i}\n"),
        )
        .unwrap();
    }
    std::fs::write(seed.join("notes.txt"), "notes 0\n").unwrap();
    commit_all(&seed, "seed");
    dmv(t, &["init", "--bare", "hub"]);
    dmv(&seed, &["push", &t.join("hub").to_string_lossy(), "main"]);
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"w\" = \"write\"\n",
        t,
        0,
    );
    let url = server.url("hub");
    let mut clone = dmv_cmd(t);
    clone.args(["clone", "--token", "w", &url, "a"]);
    ok(&clone.output().unwrap());
    let a = t.join("a");
    // The first push after the clone may still tell the server of the clone's copies.
    for round in 0..3 {
        std::fs::write(a.join("notes.txt"), format!("notes {}\n", round + 1)).unwrap();
        commit_all(&a, "notes");
        let (out, sent, _) = traced(&a, &["push"], |_| {});
        ok(&out);
        if round > 0 {
            assert!(sent < 8 << 10, "a one-file push sent {sent} bytes");
        }
    }
    // What it gave back still travels: a second clone learns where a's notes are.
    let mut clone = dmv_cmd(t);
    clone.args(["clone", "--token", "w", &url, "b"]);
    ok(&clone.output().unwrap());
    let whereis = dmv(&t.join("b"), &["whereis", "notes.txt"]);
    assert!(
        whereis.contains(&*t.join("a").to_string_lossy()),
        "{whereis}"
    );
    drop(server);
}

/// A replica `a` of `files` small files in three folders, and a bare clone of it, `hub`.
fn hub_of_small_files(t: &Path, files: u64) {
    dmv(t, &["init", "a"]);
    let a = t.join("a");
    for i in 0..files {
        let path = a.join(format!("d{}/f{i}.txt", i / 1000));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, i.to_string()).unwrap();
    }
    commit_all(&a, "many");
    dmv(t, &["clone", "--bare", "a", "hub"]);
}

/// A get of many files tells its source of the new copies as a fetch
/// does, in claims when that is fewer: a get of 3,000 files from a meta
/// clone sent 3,000 records of 57 bytes where one claim says it; what
/// else it sends is the ids it asks about, 96 bytes a file (`Has`, then
/// the exploration, then the chunks).
#[test]
fn a_get_of_many_files_tells_its_source_in_claims() {
    const FILES: u64 = 3_000;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    hub_of_small_files(t, FILES);
    dmv(t, &["clone", "--slice", "meta", "hub", "m"]);
    let (out, sent, _) = traced(&t.join("m"), &["get", "."], |_| {});
    ok(&out);
    assert!(
        sent < FILES * 110,
        "sent {sent} bytes: {} a file",
        sent / FILES
    );
    assert_eq!(
        std::fs::read_to_string(t.join("m/d2/f2999.txt")).unwrap(),
        "2999"
    );
    // The hub learnt it: a clone of it knows where the data is.
    dmv(t, &["clone", "--slice", "meta", "hub", "e"]);
    let m = t.join("m").to_string_lossy().into_owned();
    let whereis = dmv(&t.join("e"), &["whereis", "d2/f2999.txt"]);
    assert!(whereis.contains(&m), "the hub did not learn: {whereis}");
    fsck_clean(&t.join("hub"));
}

/// A clone tells its source that it holds every file, as the source's
/// log must learn, in claims: a clone of 3,000 files from a hub that two
/// replicas fill sent 6,000 records of 57 bytes back (178 bytes a file in
/// all), where the claims are 56 bytes each and what else it sends (the
/// ids it asks for) is 64 bytes a file. Over a pipe to `dmv serve
/// --stdio`, as over ssh.
#[test]
fn a_clone_tells_its_source_of_its_copies_in_claims() {
    const FILES: u64 = 3_000;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    hub_of_small_files(t, FILES);
    let (out, sent, _) = traced(t, &["clone", "hub", "b"], |_| {});
    ok(&out);
    assert!(
        sent < FILES * 100,
        "sent {sent} bytes: {} a file",
        sent / FILES
    );
    let b = t.join("b").to_string_lossy().into_owned();
    for file in ["d0/f0.txt", "d2/f2999.txt"] {
        let whereis = dmv(&t.join("hub"), &["whereis", file]);
        assert!(whereis.contains(&b), "the hub did not learn: {whereis}");
    }
    fsck_clean(&t.join("hub"));
}

/// One commit on, the replicas that cloned before hold the tree before
/// it whole and not the new one: a new clone keeps their claims of the
/// tree before as claims, and gives them back as claims, not a record per
/// file and replica (from a hub of 100,000 files that 18 replicas had
/// cloned, 92 MB of records).
#[test]
fn a_clone_one_commit_on_gives_back_the_claims_of_the_tree_before() {
    const FILES: u64 = 3_000;
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    hub_of_small_files(t, FILES);
    dmv(t, &["clone", "hub", "b"]);
    dmv(t, &["clone", "hub", "c"]);
    std::fs::write(t.join("b/new.txt"), "new").unwrap();
    commit_all(&t.join("b"), "one more");
    dmv(&t.join("b"), &["push"]);
    let (out, sent, _) = traced(t, &["clone", "hub", "d"], |_| {});
    ok(&out);
    // The ids it asks for are 64 bytes a file; the records of a and c would be 114 more.
    assert!(
        sent < FILES * 100,
        "sent {sent} bytes: {} a file",
        sent / FILES
    );
    let c = t.join("c").to_string_lossy().into_owned();
    let whereis = dmv(&t.join("d"), &["whereis", "d2/f2999.txt"]);
    assert!(whereis.contains(&c), "the clone did not learn: {whereis}");
    fsck_clean(&t.join("hub"));
}
