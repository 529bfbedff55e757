//! Whether a process runs, asked of real processes (a test of its own: the
//! library's files start no programs, which the layering test checks).

#[test]
fn this_process_runs_and_a_finished_child_does_not() {
    assert!(dmv_os::process_alive(std::process::id()));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap()).arg("--list").stdout(std::process::Stdio::null()).spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert!(!dmv_os::process_alive(pid));
    assert!(!dmv_os::process_alive(4_000_000_000), "no process has that id");
    assert!(!dmv_os::host_name().is_empty());
}
