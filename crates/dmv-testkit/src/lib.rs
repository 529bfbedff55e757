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

/// The headers of a progressive three-component JPEG of `w`×`h` and the
/// start of its first scan, 136 bytes: a decompression bomb (a decoder
/// that believes the header allocates coefficients for every pixel).
pub fn jpeg_bomb(w: u16, h: u16) -> Vec<u8> {
    let mut j = vec![0xFF, 0xD8];
    j.extend([0xFF, 0xDB, 0x00, 0x43, 0x00]);
    j.extend([1u8; 64]);
    j.extend([0xFF, 0xC2, 0x00, 0x11, 8]);
    j.extend(h.to_be_bytes());
    j.extend(w.to_be_bytes());
    j.extend([3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0]);
    // One DC code of one bit, for the value 0.
    j.extend([0xFF, 0xC4, 0x00, 0x14, 0x00, 1]);
    j.extend([0u8; 15]);
    j.push(0);
    j.extend([
        0xFF, 0xDA, 0x00, 0x0C, 3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 0, 0,
    ]);
    j.extend([0u8; 8]);
    j.extend([0xFF, 0xD9]);
    j
}

/// Runs the named test (its name as the test binary lists it) again in a
/// process of its own, with `marker` set in its environment. Returns true
/// in that process, where the test goes on; false in the calling one,
/// once it has passed.
fn rerun_alone(name: &str, marker: &str) -> bool {
    if std::env::var_os(marker).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env(marker, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{:?}\n{text}",
        out.status
    );
    false
}

/// Runs the named test again in a process of its own: for a test that
/// measures the peak memory of the commands it starts. A child's peak
/// (`ru_maxrss`) counts the memory of the process that started it, as
/// it was when the child was made (Linux records the old address
/// space's peak at exec), so in a test binary whose other tests hold
/// hundreds of MiB it measures them. Returns true in the process of
/// its own, where the test goes on; false in the caller, once it passed.
pub fn in_a_process_of_its_own(name: &str) -> bool {
    rerun_alone(name, "DMV_TEST_PROCESS_OF_ITS_OWN")
}

/// Runs the named test again in a child process whose address space has only
/// `headroom` bytes to spare: there an allocation sized by a declared length
/// aborts instead of quietly reserving memory. Returns true in the child,
/// where the test goes on; false in the parent, once the child has passed.
pub fn in_small_address_space(name: &str, headroom: u64) -> bool {
    if !rerun_alone(name, "DMV_TEST_SMALL_ADDRESS_SPACE") {
        return false;
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let vm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    let limit = vm_kib * 1024 + headroom;
    let rl = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: setrlimit only reads the struct passed by reference.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &rl) }, 0);
    // Memory already mapped but free (allocator arenas) is still usable: ask for well past the headroom.
    assert!(
        Vec::<u8>::new()
            .try_reserve(2 * headroom as usize + (64 << 20))
            .is_err(),
        "the address space is not limited"
    );
    true
}

/// Every `.rs` file under `dir`, for the tests that read the crates' sources.
pub fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// How many of the pages of `len` bytes of the open `file` from `offset`
/// (a multiple of the page size) the kernel's page cache holds, and how
/// many pages that is: asked with mincore(2) on a mapping, which neither
/// reads the file nor sends its file system anything. Pages of the
/// system's size (4 KiB, 16 KiB on Apple silicon, 64 KiB on some ARM).
#[cfg(unix)]
pub fn pages_cached(file: &std::fs::File, offset: u64, len: usize) -> (usize, usize) {
    use std::os::fd::AsRawFd;
    // SAFETY: sysconf only reads its argument.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
    let mut pages = vec![0u8; len.div_ceil(page)];
    // SAFETY: a read-only shared mapping of `len` bytes of an open file,
    // unmapped before return; mincore writes one byte per page of it
    // into `pages`, which is that long.
    unsafe {
        let at = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            libc::off_t::try_from(offset).unwrap(),
        );
        assert_ne!(at, libc::MAP_FAILED, "{}", std::io::Error::last_os_error());
        let asked = libc::mincore(at, len, pages.as_mut_ptr().cast());
        let error = std::io::Error::last_os_error();
        libc::munmap(at, len);
        assert_eq!(asked, 0, "{error}");
    }
    (pages.iter().filter(|p| *p & 1 == 1).count(), pages.len())
}
