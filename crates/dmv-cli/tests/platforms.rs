//! The core of DMV on the binary under test: the native one, and (run again
//! by the test command through `DMV_TEST_BIN`) the static musl builds for
//! aarch64, under qemu-user, and for x86-64. What a Raspberry Pi or a phone
//! in Termux needs to be a replica: init, add, commit, status, switch,
//! merge, clone, push and pull over a path and over HTTP, a meta clone's
//! get and drop, and fsck finding a flipped bit.

mod common;
use common::remote::*;
use common::servers::HttpServer;
use common::*;

use std::path::Path;

fn same(a: &Path, b: &Path) -> bool {
    std::fs::read(a).unwrap() == std::fs::read(b).unwrap()
}

fn with_token(dir: &Path, args: &[&str]) -> std::process::Output {
    dmv_cmd(dir).args(args).env("DMV_TOKEN", "tok-w").output().unwrap()
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
    assert_eq!(staged.lines().filter(|l| l.starts_with("A ")).count(), 3, "{staged}");
    dmv(&laptop, &["commit", "-m", "the shoot"]);
    assert_eq!(dmv(&laptop, &["status", "--short"]), "");

    // A branch and a change on each side, merged.
    dmv(&laptop, &["switch", "-c", "grade"]);
    std::fs::write(laptop.join("shoot/p1.raw"), dmv_testkit::noise(1 << 20, 3)).unwrap();
    commit_all(&laptop, "graded");
    dmv(&laptop, &["switch", "main"]);
    assert!(std::fs::read(laptop.join("shoot/p1.raw")).unwrap() == dmv_testkit::noise(1 << 20, 2), "switch put main's version back");
    std::fs::write(laptop.join("notes.txt"), "day one\nkeep p0\n").unwrap();
    commit_all(&laptop, "notes");
    dmv(&laptop, &["merge", "grade"]);
    assert!(std::fs::read(laptop.join("shoot/p1.raw")).unwrap() == dmv_testkit::noise(1 << 20, 3));
    assert_eq!(std::fs::read_to_string(laptop.join("notes.txt")).unwrap(), "day one\nkeep p0\n");
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
    let server = HttpServer::start("[repos]\nhub = \"hub\"\n[tokens]\n\"tok-w\" = { access = \"write\", user = \"al\" }\n", t, 0);
    let url = format!("http://127.0.0.1:{}/hub", server.port);
    let pi = t.join("pi");
    ok(&with_token(t, &["clone", &url, pi.to_str().unwrap()]));
    assert!(same(&laptop.join("shoot/p0.raw"), &pi.join("shoot/p0.raw")));
    std::fs::write(pi.join("notes.txt"), "day one\nkeep p0\nfrom the pi\n").unwrap();
    commit_all(&pi, "from the pi");
    ok(&with_token(&pi, &["push"]));
    dmv(&desk, &["pull"]);
    assert_eq!(std::fs::read_to_string(desk.join("notes.txt")).unwrap(), "day one\nkeep p0\nfrom the pi\n");

    // A meta clone over HTTP holds no data until asked; it gets one file and drops it again.
    let phone = t.join("phone");
    ok(&with_token(t, &["clone", "--slice", "meta", &url, phone.to_str().unwrap()]));
    assert!(!phone.join("shoot/p0.raw").exists());
    ok(&with_token(&phone, &["get", "shoot/p0.raw"]));
    assert!(same(&laptop.join("shoot/p0.raw"), &phone.join("shoot/p0.raw")));
    let dropped = with_token(&phone, &["drop", "--numcopies", "1", "shoot/p0.raw"]);
    ok(&dropped);
    assert!(stderr(&dropped).contains("confirmed by origin"), "{}", stderr(&dropped));
    assert!(!phone.join("shoot/p0.raw").exists());
    fsck_clean(&phone);

    // One flipped bit in the desk's packs: fsck finds it; put back, all is well.
    fsck_clean(&desk);
    let packs = desk.join(".dmv/objects/packs");
    let biggest =
        std::fs::read_dir(&packs).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "pack")).max_by_key(|p| p.metadata().unwrap().len()).unwrap();
    let whole = std::fs::read(&biggest).unwrap();
    let mut flipped = whole.clone();
    flipped[whole.len() / 2] ^= 0x10;
    std::fs::write(&biggest, &flipped).unwrap();
    let fsck = dmv_out(&desk, &["fsck", "--full"]);
    assert!(!fsck.status.success(), "fsck passed a flipped bit: {}", String::from_utf8_lossy(&fsck.stdout));
    std::fs::write(&biggest, &whole).unwrap();
    fsck_clean(&desk);
}
