//! Whether a process runs, and which files processes hold open for
//! writing, asked of real processes (a test of its own: the library's
//! files start no programs, which the layering test checks).

#[test]
fn this_process_runs_and_a_finished_child_does_not() {
    assert!(dmv_os::process_alive(std::process::id()));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--list")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert!(!dmv_os::process_alive(pid));
    assert!(
        !dmv_os::process_alive(4_000_000_000),
        "no process has that id"
    );
    assert!(!dmv_os::host_name().is_empty());
}

/// A writer pausing with its file open, in this process or another:
/// found; a file open only for reading, or closed: not.
#[cfg(target_os = "linux")]
#[test]
fn files_open_for_writing_are_found_wherever_they_are_open() {
    let dir = tempfile::tempdir().unwrap();
    let root = dmv_os::canonicalize(dir.path()).unwrap();
    let (written, read, other) = (
        root.join("take.mov"),
        root.join("notes.txt"),
        root.join("other.raw"),
    );
    std::fs::write(&read, b"x").unwrap();
    let writer = std::fs::File::create(&written).unwrap();
    let reader = std::fs::File::open(&read).unwrap();
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg("exec 3>>\"$1\"; echo open; exec sleep 30")
        .arg("sh")
        .arg(&other)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let found = dmv_os::files_open_for_writing(&root).unwrap();
    assert_eq!(
        found,
        [written.clone(), other.clone()].into_iter().collect(),
        "{found:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    drop(writer);
    assert!(dmv_os::files_open_for_writing(&root).unwrap().is_empty());
    drop(reader);
}
