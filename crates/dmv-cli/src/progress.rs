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
        Bar { label, start: Instant::now(), enabled: std::io::stderr().is_terminal() && !SILENCED.load(Ordering::Relaxed), bar: Mutex::new(None) }
    }

    /// Bytes done out of total (0 when unknown).
    pub fn update(&self, done: u64, total: u64) {
        if !self.enabled || self.start.elapsed() < Duration::from_secs(1) {
            return;
        }
        let mut bar = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        let bar = bar.get_or_insert_with(|| {
            let b = if total > 0 { ProgressBar::new(total) } else { ProgressBar::new_spinner() };
            let template = if total > 0 { "{prefix:>10} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}" } else { "{prefix:>10} {spinner} {bytes} {bytes_per_sec}" };
            if let Ok(style) = ProgressStyle::with_template(template) {
                b.set_style(style.progress_chars("=> "));
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

impl dmv_sync::Progress for Bar {
    fn update(&self, done: u64, total: u64) {
        Bar::update(self, done, total)
    }

    fn finish(&self) {
        Bar::finish(self)
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

impl dmv_sync::Progress for Phases {
    fn phase(&self, phase: dmv_sync::Phase) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        *current = Some(Bar::new(phase.label()));
    }

    fn update(&self, done: u64, total: u64) {
        if let Some(p) = self.current.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            p.update(done, total);
        }
    }

    fn finish(&self) {
        if let Some(p) = self.current.lock().unwrap_or_else(|e| e.into_inner()).take() {
            p.finish();
        }
    }
}
