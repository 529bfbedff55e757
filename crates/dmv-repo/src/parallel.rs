//! Work on items spread over a few threads, with the results handed back to
//! the calling thread in batches as they are done (so it can record them and
//! report progress while the work goes on).

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// When a thread sends what it has done so far: after this many items, or
/// items of this much weight (a message per item would cost more in
/// wake-ups than small items themselves).
pub(crate) struct Batches {
    pub items: usize,
    pub weight: u64,
}

/// Runs `work` on every index in `runs` on `threads` threads. Each thread
/// takes whole runs, one after the other as it becomes free, and does a run's
/// items in order with scratch state of its own (`S::default()`, kept across
/// its runs). `done` is called on this thread with each index and its result;
/// `weight` says how much an index counts towards a batch. The first error
/// stops every thread before its next item and is returned once the results
/// already sent have been handed to `done`.
pub(crate) fn run_batched<S, R, E>(
    runs: &[Range<usize>],
    threads: usize,
    batches: Batches,
    weight: impl Fn(usize) -> u64 + Sync,
    work: impl Fn(usize, &mut S) -> Result<R, E> + Sync,
    mut done: impl FnMut(usize, R),
) -> Result<(), E>
where
    S: Default,
    R: Send,
    E: Send,
{
    if threads.min(runs.len()) <= 1 {
        // One run (a hundred files) or one thread: a thread would cost more than it does.
        let mut scratch = S::default();
        for i in runs.iter().flat_map(Range::clone) {
            let r = work(i, &mut scratch)?;
            done(i, r);
        }
        return Ok(());
    }
    let next_run = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<(Vec<(usize, R)>, Option<E>)>(16);
    std::thread::scope(|scope| {
        // No more threads than runs: a handful of files is not worth a thread each.
        for _ in 0..threads.min(runs.len()) {
            let tx = tx.clone();
            let (next_run, stop, batches, weight, work) =
                (&next_run, &stop, &batches, &weight, &work);
            scope.spawn(move || {
                let mut scratch = S::default();
                let (mut batch, mut batch_weight) = (Vec::new(), 0);
                while let Some(run) = runs.get(next_run.fetch_add(1, Ordering::Relaxed)) {
                    for i in run.clone() {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        match work(i, &mut scratch) {
                            Ok(r) => batch.push((i, r)),
                            Err(err) => {
                                stop.store(true, Ordering::Relaxed);
                                let _ = tx.send((batch, Some(err)));
                                return;
                            }
                        }
                        batch_weight += weight(i);
                        if batch.len() == batches.items || batch_weight >= batches.weight {
                            if tx.send((std::mem::take(&mut batch), None)).is_err() {
                                return;
                            }
                            batch_weight = 0;
                        }
                    }
                }
                let _ = tx.send((batch, None));
            });
        }
        drop(tx);
        let mut first_error = None;
        for (batch, err) in rx {
            for (i, r) in batch {
                done(i, r);
            }
            if let Some(err) = err {
                stop.store(true, Ordering::Relaxed);
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_with_its_own_result() {
        let runs: Vec<Range<usize>> = vec![0..3, 3..10, 10..11, 11..1000];
        let mut seen = vec![0u32; 1000];
        let result: Result<(), ()> = run_batched(
            &runs,
            4,
            Batches {
                items: 7,
                weight: 100,
            },
            |i| i as u64,
            |i, _: &mut ()| Ok(i * 2),
            |i, r| {
                assert_eq!(r, i * 2);
                seen[i] += 1;
            },
        );
        assert!(result.is_ok());
        assert!(seen.iter().all(|n| *n == 1));
    }

    #[test]
    fn an_error_stops_the_work_and_is_returned() {
        let runs: Vec<Range<usize>> = (0..100).map(|i| i * 10..i * 10 + 10).collect();
        let mut done = 0;
        let result = run_batched(
            &runs,
            3,
            Batches {
                items: 4,
                weight: u64::MAX,
            },
            |_| 1,
            |i, _: &mut ()| if i == 500 { Err("boom") } else { Ok(()) },
            |_, ()| done += 1,
        );
        assert_eq!(result, Err("boom"));
        assert!(done < 1000);
    }
}
