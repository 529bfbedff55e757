//! Helpers shared by the crates' tests (a dev-dependency only).

pub mod camera_raw;
pub mod golden;

/// `len` bytes of xorshift noise from `seed`: it neither compresses nor
/// repeats, and content-defined cuts land at data-dependent places.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = 0x1234_5678_9abc_def1u64 ^ seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Runs the named test again in a child process whose address space has only
/// `headroom` bytes to spare: there an allocation sized by a declared length
/// aborts instead of quietly reserving memory. Returns true in the child,
/// where the test goes on; false in the parent, once the child has passed.
pub fn in_small_address_space(name: &str, headroom: u64) -> bool {
    const CHILD: &str = "DMV_TEST_SMALL_ADDRESS_SPACE";
    if std::env::var_os(CHILD).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap()).args(["--exact", name, "--test-threads=1", "--nocapture"]).env(CHILD, "1").output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("1 passed"), "{:?}\n{text}", out.status);
        return false;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let vm_kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmSize:")).unwrap().trim().trim_end_matches("kB").trim().parse().unwrap();
    let limit = vm_kib * 1024 + headroom;
    let rl = libc::rlimit { rlim_cur: limit, rlim_max: limit };
    // SAFETY: setrlimit only reads the struct passed by reference.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &rl) }, 0);
    // Memory already mapped but free (allocator arenas) is still usable: ask for well past the headroom.
    assert!(Vec::<u8>::new().try_reserve(2 * headroom as usize + (64 << 20)).is_err(), "the address space is not limited");
    true
}
