//! The core of DMV on the binary under test: the native one, and (run again
//! by the test command through `DMV_TEST_BIN`) the static musl builds for
//! aarch64, under qemu-user, and for x86-64. What a Raspberry Pi or a phone
//! in Termux needs to be a replica: init, add, commit, status, switch,
//! merge, clone, push and pull over a path and over HTTP, a meta clone's
//! get and drop, fsck finding a flipped bit, and a frozen remote left.

mod common;
use common::remote::*;
use common::servers::HttpServer;
use common::*;

use std::path::Path;

fn same(a: &Path, b: &Path) -> bool {
    std::fs::read(a).unwrap() == std::fs::read(b).unwrap()
}

fn with_token(dir: &Path, args: &[&str]) -> std::process::Output {
    dmv_cmd(dir)
        .args(args)
        .env("DMV_TOKEN", "tok-w")
        .output()
        .unwrap()
}

#[test]
fn the_core_of_dmv_on_the_binary_under_test() {
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    eprintln!("binary under test: {}", bin().display());
    let laptop = t.join("laptop");
    dmv(t, &["init", laptop.to_str().unwrap()]);
    std::fs::create_dir_all(laptop.join("shoot")).unwrap();
    std::fs::write(laptop.join("shoot/p0.raw"), dmv_testkit::noise(3 << 20, 1)).unwrap();
    std::fs::write(laptop.join("shoot/p1.raw"), dmv_testkit::noise(1 << 20, 2)).unwrap();
    std::fs::write(laptop.join("notes.txt"), "day one\n").unwrap();
    dmv(&laptop, &["add", "."]);
    let staged = dmv(&laptop, &["status", "--short"]);
    assert_eq!(
        staged.lines().filter(|l| l.starts_with("A ")).count(),
        3,
        "{staged}"
    );
    dmv(&laptop, &["commit", "-m", "the shoot"]);
    assert_eq!(dmv(&laptop, &["status", "--short"]), "");

    // A branch and a change on each side, merged.
    dmv(&laptop, &["switch", "-c", "grade"]);
    std::fs::write(laptop.join("shoot/p1.raw"), dmv_testkit::noise(1 << 20, 3)).unwrap();
    commit_all(&laptop, "graded");
    dmv(&laptop, &["switch", "main"]);
    assert!(
        std::fs::read(laptop.join("shoot/p1.raw")).unwrap() == dmv_testkit::noise(1 << 20, 2),
        "switch put main's version back"
    );
    std::fs::write(laptop.join("notes.txt"), "day one\nkeep p0\n").unwrap();
    commit_all(&laptop, "notes");
    dmv(&laptop, &["merge", "grade"]);
    assert!(std::fs::read(laptop.join("shoot/p1.raw")).unwrap() == dmv_testkit::noise(1 << 20, 3));
    assert_eq!(
        std::fs::read_to_string(laptop.join("notes.txt")).unwrap(),
        "day one\nkeep p0\n"
    );
    assert_eq!(dmv(&laptop, &["log", "--oneline"]).lines().count(), 4);

    // A hub by path: push, clone, pull.
    let hub = t.join("hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    dmv(&laptop, &["remote", "add", "origin", hub.to_str().unwrap()]);
    dmv(&laptop, &["push", "origin", "main"]);
    let desk = t.join("desk");
    dmv(t, &["clone", hub.to_str().unwrap(), desk.to_str().unwrap()]);
    for f in ["shoot/p0.raw", "shoot/p1.raw", "notes.txt"] {
        assert!(same(&laptop.join(f), &desk.join(f)), "{f}");
    }

    // The hub over HTTP: a clone, a push back, a pull by path that brings it.
    let server = HttpServer::start(
        "[repos]\nhub = \"hub\"\n[tokens]\n\"tok-w\" = { access = \"write\", user = \"al\" }\n",
        t,
        0,
    );
    let url = format!("http://127.0.0.1:{}/hub", server.port);
    let pi = t.join("pi");
    ok(&with_token(t, &["clone", &url, pi.to_str().unwrap()]));
    assert!(same(&laptop.join("shoot/p0.raw"), &pi.join("shoot/p0.raw")));
    std::fs::write(pi.join("notes.txt"), "day one\nkeep p0\nfrom the pi\n").unwrap();
    commit_all(&pi, "from the pi");
    ok(&with_token(&pi, &["push"]));
    dmv(&desk, &["pull"]);
    assert_eq!(
        std::fs::read_to_string(desk.join("notes.txt")).unwrap(),
        "day one\nkeep p0\nfrom the pi\n"
    );

    // A meta clone over HTTP holds no data until asked; it gets one file and drops it again.
    let phone = t.join("phone");
    ok(&with_token(
        t,
        &["clone", "--slice", "meta", &url, phone.to_str().unwrap()],
    ));
    assert!(!phone.join("shoot/p0.raw").exists());
    ok(&with_token(&phone, &["get", "shoot/p0.raw"]));
    assert!(same(
        &laptop.join("shoot/p0.raw"),
        &phone.join("shoot/p0.raw")
    ));
    let dropped = with_token(&phone, &["drop", "--numcopies", "1", "shoot/p0.raw"]);
    ok(&dropped);
    assert!(
        stderr(&dropped).contains("confirmed by origin"),
        "{}",
        stderr(&dropped)
    );
    assert!(!phone.join("shoot/p0.raw").exists());
    fsck_clean(&phone);

    // One flipped bit in the desk's packs: fsck finds it; put back, all is well.
    fsck_clean(&desk);
    let packs = desk.join(".dmv/objects/packs");
    let biggest = std::fs::read_dir(&packs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "pack"))
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    let whole = std::fs::read(&biggest).unwrap();
    let mut flipped = whole.clone();
    flipped[whole.len() / 2] ^= 0x10;
    std::fs::write(&biggest, &flipped).unwrap();
    let fsck = dmv_out(&desk, &["fsck", "--full"]);
    assert!(
        !fsck.status.success(),
        "fsck passed a flipped bit: {}",
        String::from_utf8_lossy(&fsck.stdout)
    );
    std::fs::write(&biggest, &whole).unwrap();
    fsck_clean(&desk);
}

/// The native build, which made what the binary under test is given.
fn native(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dmv"))
        .current_dir(dir)
        .args(args)
        .env("DMV_AUTHOR_NAME", "Test")
        .env("DMV_AUTHOR_EMAIL", "t@example.com")
        .output()
        .unwrap();
    ok(&out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A tree made on Linux, which holds any name and any kind of file, checked
/// out by the binary under test. A Windows build refuses names Windows
/// cannot hold or would fold together, naming them and writing nothing;
/// it checks out an executable and a symlink as plain files and keeps
/// their kinds in what it commits. Any other build checks all of it out as it is.
#[test]
fn names_and_file_kinds_a_windows_desk_cannot_hold() {
    let windows = bin().extension().is_some_and(|x| x == "exe");
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let made = |name: &str, files: &[(&str, &[u8])]| {
        let repo = t.join(name);
        native(t, &["init", repo.to_str().unwrap()]);
        for (path, bytes) in files {
            std::fs::create_dir_all(repo.join(path).parent().unwrap()).unwrap();
            std::fs::write(repo.join(path), bytes).unwrap();
        }
        native(&repo, &["add", "."]);
        native(&repo, &["commit", "-m", name]);
        repo
    };
    let devices = made(
        "devices",
        &[("shoot/AUX.jpg", b"a photo"), ("shoot/b.jpg", b"b")],
    );
    let dots = made("dots", &[("notes.", b"trailing dot")]);
    let cases = made(
        "cases",
        &[("shoot/Photo.jpg", b"one"), ("shoot/photo.jpg", b"two")],
    );
    for (repo, refusal) in [
        (&devices, "shoot/AUX.jpg is AUX, a name Windows keeps for a device"),
        (&dots, "notes. ends in a dot or a space"),
        (&cases, "shoot/Photo.jpg and shoot/photo.jpg would be one file on this file system (it ignores case)"),
    ] {
        let desk = t.join(format!("{}-desk", repo.file_name().unwrap().to_str().unwrap()));
        let out = dmv_out(t, &["clone", repo.to_str().unwrap(), desk.to_str().unwrap()]);
        if windows {
            assert!(!out.status.success() && stderr(&out).contains(refusal), "{}", stderr(&out));
            assert!(stderr(&out).contains("but its files are not checked out"), "{}", stderr(&out));
            let written: Vec<_> = std::fs::read_dir(&desk).unwrap().flatten().map(|e| e.file_name()).filter(|n| n != ".dmv").collect();
            assert!(written.is_empty(), "a refused checkout wrote {written:?}");
        } else {
            ok(&out);
            let worktree = |dir: &Path| file_bytes(dir).into_iter().filter(|(path, _)| !path.starts_with(".dmv/")).collect::<Vec<_>>();
            assert_eq!(worktree(&desk), worktree(repo));
        }
    }

    // An executable and a symlink.
    // A path past Windows's old 260-character limit, too.
    let deep = format!(
        "deep/{}/take.wav",
        ["a long folder name of a session of recording"; 6].join("/")
    );
    let kit = made(
        "kit",
        &[
            ("tools/run.sh", b"#!/bin/sh\necho hi\n"),
            ("shoot/a.jpg", b"a"),
            (deep.as_str(), b"a take"),
        ],
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        kit.join("tools/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("shoot/a.jpg", kit.join("latest")).unwrap();
    native(&kit, &["add", "."]);
    native(&kit, &["commit", "-m", "a tool and a link"]);
    let desk = t.join("kit-desk");
    let cloned = dmv_out(t, &["clone", kit.to_str().unwrap(), desk.to_str().unwrap()]);
    ok(&cloned);
    let warned = stderr(&cloned);
    assert_eq!(
        warned.contains("warning: 1 symlinks checked out as plain files"),
        windows,
        "{warned}"
    );
    assert_eq!(
        warned.contains("warning: 1 executable files checked out without an executable bit"),
        windows,
        "{warned}"
    );
    let link = std::fs::symlink_metadata(desk.join("latest")).unwrap();
    assert_eq!(
        link.is_symlink(),
        !windows,
        "a symlink is a file holding its target on Windows only"
    );
    if windows {
        assert_eq!(std::fs::read(desk.join("latest")).unwrap(), b"shoot/a.jpg");
    }
    assert_eq!(
        dmv(&desk, &["status", "--short"]),
        "",
        "what was checked out is clean"
    );
    std::fs::write(desk.join("shoot/a.jpg"), b"a, graded").unwrap();
    std::fs::write(desk.join("tools/run.sh"), b"#!/bin/sh\necho graded\n").unwrap();
    assert_eq!(dmv(&desk, &["status", "--short"]).lines().count(), 2);
    commit_all(&desk, "graded");
    // Back on Linux, the commit made on the desk has the link and the tool as they were.
    let back = t.join("kit-back");
    native(
        t,
        &["clone", desk.to_str().unwrap(), back.to_str().unwrap()],
    );
    assert!(
        std::fs::symlink_metadata(back.join("latest"))
            .unwrap()
            .is_symlink(),
        "the link is still one"
    );
    assert_ne!(
        std::fs::metadata(back.join("tools/run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0,
        "the tool is still executable"
    );
    assert_eq!(
        std::fs::read(back.join("tools/run.sh")).unwrap(),
        b"#!/bin/sh\necho graded\n"
    );
    assert_eq!(
        std::fs::read(back.join("shoot/a.jpg")).unwrap(),
        b"a, graded"
    );
    assert_eq!(std::fs::read(desk.join(&deep)).unwrap(), b"a take");

    // Drops one after another: each rewrites the multi-pack index the last
    // one wrote, which the store has mapped (Windows will not replace a
    // mapped file) and lists the packs it removed (which Windows keeps
    // listed while they are open).
    let phone = t.join("kit-phone");
    ok(&dmv_out(
        t,
        &[
            "clone",
            "--slice",
            "meta",
            kit.to_str().unwrap(),
            phone.to_str().unwrap(),
        ],
    ));
    ok(&dmv_out(
        &phone,
        &["get", "shoot/a.jpg", "tools/run.sh", &deep],
    ));
    for file in ["shoot/a.jpg", "tools/run.sh", &deep] {
        let dropped = dmv_out(&phone, &["drop", "--numcopies", "1", file]);
        ok(&dropped);
        let said = stderr(&dropped);
        assert!(
            said.contains("bytes freed") && !said.contains(" 0 bytes freed"),
            "{said}"
        );
        assert!(!phone.join(file).exists());
    }
    fsck_clean(&phone);
}

/// A path remote whose server freezes (a hung disk or machine does this)
/// is left after `remote.timeout` on every build, and the push says so in
/// one line. Windows's anonymous pipes cannot be polled: the wait is ended
/// there, as everywhere, by killing the frozen server.
#[test]
fn a_frozen_path_remote_is_left_after_the_timeout() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let t = tempfile::tempdir().unwrap();
    let t = t.path();
    let laptop = t.join("laptop");
    dmv(t, &["init", laptop.to_str().unwrap()]);
    std::fs::write(laptop.join("a.raw"), dmv_testkit::noise(32 << 20, 1)).unwrap();
    commit_all(&laptop, "a");
    let hub = t.join("frozen-hub");
    dmv(t, &["init", "--bare", hub.to_str().unwrap()]);
    dmv(&laptop, &["remote", "add", "origin", hub.to_str().unwrap()]);
    dmv(&laptop, &["config", "remote.timeout", "2"]);

    // Every server of this hub is stopped once it has begun to receive (a
    // pack being written): before it has started, Wine's CreateProcess would
    // wait for it, and that is not the wait under test.
    let packs = hub.join(".dmv/objects/packs");
    let (done, frozen) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(Mutex::new(Vec::new())),
    );
    let freezer = {
        let (done, frozen) = (done.clone(), frozen.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let receiving = std::fs::read_dir(&packs)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("tmp-"));
                for entry in std::fs::read_dir("/proc")
                    .unwrap()
                    .flatten()
                    .filter(|_| receiving)
                {
                    let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                        continue;
                    };
                    let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                    let cmdline = String::from_utf8_lossy(&cmdline);
                    if cmdline.contains("--stdio")
                        && cmdline.contains("frozen-hub")
                        && !frozen.lock().unwrap().contains(&pid)
                    {
                        // SAFETY: kill(2) with a standard signal, to a server this test's command started.
                        unsafe { libc::kill(pid, libc::SIGSTOP) };
                        frozen.lock().unwrap().push(pid);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let mut push = dmv_cmd(&laptop)
        .args(["push", "origin", "main"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while push.try_wait().unwrap().is_none()
        && start.elapsed() < std::time::Duration::from_secs(120)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let hung = push.try_wait().unwrap().is_none();
    done.store(true, Ordering::Relaxed);
    freezer.join().unwrap();
    for &pid in frozen.lock().unwrap().iter() {
        // SAFETY: as above; a server left stopped would outlive the test.
        unsafe { libc::kill(pid, libc::SIGCONT) };
    }
    let _ = push.kill();
    let out = push.wait_with_output().unwrap();
    assert!(
        !hung,
        "the push still waited on the frozen server after 120 s"
    );
    assert!(!frozen.lock().unwrap().is_empty(), "no server was frozen");
    let line = one_line_error(&out);
    assert!(line.contains("stopped answering"), "{line}");
    // The hub took nothing, and answers again once it is not frozen.
    assert!(dmv(&hub, &["branch"]).trim().is_empty());
    ok(&dmv_out(&laptop, &["push", "origin", "main"]));
    assert_eq!(
        dmv(&hub, &["rev-parse", "main"]),
        dmv(&laptop, &["rev-parse", "main"])
    );
}
