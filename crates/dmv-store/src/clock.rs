//! The resolution of file timestamps, which decides when a file's stat
//! can be trusted and when a folder's mtime can tell a change.

/// File timestamps come from the kernel's coarse clock, so several writes
/// within one of its ticks leave the stat unchanged: a file whose mtime is
/// within a tick of the start of our read may have changed during it. The
/// tick is the coarse clock's resolution (1-10 ms by the kernel's HZ; 4 ms
/// here), plus a millisecond; 10 ms where the kernel does not say, and 17 ms
/// on Windows, whose file times come from a clock that ticks every 15.6 ms.
pub fn timestamp_granularity() -> std::time::Duration {
    static GRANULARITY: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    *GRANULARITY.get_or_init(|| {
        let fallback = std::time::Duration::from_millis(if cfg!(windows) { 17 } else { 10 });
        #[cfg(target_os = "linux")]
        {
            let mut res = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_getres writes one timespec we own.
            if unsafe { libc::clock_getres(libc::CLOCK_REALTIME_COARSE, &mut res) } == 0 {
                let tick = std::time::Duration::new(
                    res.tv_sec.max(0) as u64,
                    res.tv_nsec.clamp(0, 999_999_999) as u32,
                );
                return (tick + std::time::Duration::from_millis(1))
                    .clamp(std::time::Duration::from_millis(2), fallback);
            }
        }
        fallback
    })
}
