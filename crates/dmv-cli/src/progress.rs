//! Progress bars that appear only on a terminal and only once work has lasted
//! a second, so quick commands and piped output stay quiet.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Set by `-q`: no bar at all, even on a terminal.
static SILENCED: AtomicBool = AtomicBool::new(false);

// `-q`, as git's commands take it. (Not a doc comment: clap would make it
// the about text of every command that flattens it.)
#[derive(clap::Args)]
pub struct Quiet {
    /// Print nothing but errors and warnings: no progress, no summary.
    #[arg(short, long)]
    quiet: bool,
}

impl Quiet {
    /// When given, no progress bars from now on. Whether it was given.
    pub fn apply(&self) -> bool {
        if self.quiet {
            SILENCED.store(true, Ordering::Relaxed);
        }
        self.quiet
    }
}

/// One bar under a fixed label; it reports whatever phase the work is in.
pub struct Bar {
    label: &'static str,
    start: Instant,
    enabled: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Bar {
    pub fn new(label: &'static str) -> Bar {
        Bar {
            label,
            start: Instant::now(),
            enabled: std::io::stderr().is_terminal() && !SILENCED.load(Ordering::Relaxed),
            bar: Mutex::new(None),
        }
    }

    /// Bytes done out of total (0 when unknown).
    pub fn update(&self, done: u64, total: u64) {
        if !self.enabled || self.start.elapsed() < Duration::from_secs(1) {
            return;
        }
        let mut bar = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        let bar = bar.get_or_insert_with(|| {
            // The bar appears a second in, with work already done: its clock starts with the work's,
            // and the rate is the work's average so far (indicatif's own saw the work done before
            // the bar as done in no time: "156.98 GiB/s", "eta 0s").
            let b = if total > 0 {
                ProgressBar::new(total)
            } else {
                ProgressBar::new_spinner()
            }
            .with_elapsed(self.start.elapsed());
            let template = if total > 0 {
                "{prefix:>10} [{bar:30}] {bytes}/{total_bytes} {rate} eta {left}"
            } else {
                "{prefix:>10} {spinner} {bytes} {rate}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                b.set_style(
                    style
                        .progress_chars("=> ")
                        .with_key("rate", average_rate)
                        .with_key("left", time_left),
                );
            }
            b.set_prefix(self.label);
            b
        });
        if total > 0 {
            bar.set_length(total);
        }
        bar.set_position(done);
    }

    pub fn finish(&self) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take() {
            bar.finish_and_clear();
        }
    }
}

/// Bytes per second over the whole work so far.
fn average_rate(state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write) {
    let secs = state.elapsed().as_secs_f64();
    if secs > 0.0 {
        let _ = write!(
            out,
            "{}/s",
            indicatif::BinaryBytes((state.pos() as f64 / secs) as u64)
        );
    }
}

/// The time the rest takes at the average rate so far.
fn time_left(state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write) {
    let (done, secs) = (state.pos(), state.elapsed().as_secs_f64());
    match state.len() {
        Some(total) if done > 0 && secs > 0.0 => {
            let left = (total.saturating_sub(done)) as f64 * secs / done as f64;
            let _ = write!(
                out,
                "{}",
                indicatif::HumanDuration(Duration::from_secs_f64(left.ceil()))
            );
        }
        _ => {
            let _ = write!(out, "?");
        }
    }
}

impl dmv_sync::Progress for Bar {
    fn update(&self, done: u64, total: u64) {
        Bar::update(self, done, total)
    }

    fn finish(&self) {
        Bar::finish(self)
    }

    fn warn(&self, line: &str) {
        warn_above(self, line)
    }
}

/// A warning on its own line, above the bar.
fn warn_above(bar: &Bar, line: &str) {
    match bar.bar.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(shown) => shown.suspend(|| eprintln!("dmv: warning: {line}")),
        None => eprintln!("dmv: warning: {line}"),
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A bar per phase of a library operation (receiving, then checkout, …).
#[derive(Default)]
pub struct Phases {
    current: Mutex<Option<Bar>>,
}

/// With `DMV_TRACE`, when each phase starts, from the first: where a
/// command's time goes, for the benchmarks.
fn trace_phase(label: &str) {
    static FIRST: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    if std::env::var_os("DMV_TRACE").is_some() {
        let first = FIRST.get_or_init(std::time::Instant::now);
        eprintln!(
            "trace: phase {label} +{:.3} s",
            first.elapsed().as_secs_f64()
        );
    }
}

impl dmv_sync::Progress for Phases {
    fn phase(&self, phase: dmv_sync::Phase) {
        trace_phase(phase.label());
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        *current = Some(Bar::new(phase.label()));
    }

    fn update(&self, done: u64, total: u64) {
        if let Some(p) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            p.update(done, total);
        }
    }

    fn finish(&self) {
        if let Some(p) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            p.finish();
            trace_phase("end");
        }
    }

    fn warn(&self, line: &str) {
        match self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            Some(bar) => warn_above(bar, line),
            None => eprintln!("dmv: warning: {line}"),
        }
    }
}
