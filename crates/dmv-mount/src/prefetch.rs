//! When reading an absent file should bring its next siblings along: a
//! copy of a folder (`cp -r`, a backup, an import) opens its files in the
//! order the folder lists them, and a fetch per file is a round trip and a
//! pack each, where `dmv get` of the folder is one request. Files opened
//! in order are fetched in growing batches, and the next batch is fetched
//! ahead on a thread of its own while the reader copies this one, so the
//! copy waits on the network only when it overtakes it; a file opened out
//! of order (a viewer jumping to one photo) is fetched alone. Only files
//! the mount reads whole (under 16 MiB) are batched: of a film or a RAW a
//! reader may want only the start, which the chunks it reads bring.

use std::collections::HashMap;

/// The first batch fetched along with a file opened in order.
pub const FIRST_BATCH: usize = 8;
/// The most files fetched along in one batch.
pub const MOST_FILES: usize = 256;
/// The most bytes fetched along in one batch (a quarter of
/// `mount.cacheSize` when that is smaller).
pub const MOST_BYTES: u64 = 64 << 20;
/// The most folders whose order is remembered; past it, all are forgotten
/// (a run only needs its folder's last file).
const MOST_FOLDERS: usize = 1024;

/// Per folder, the absent file expected next if the folder is read in
/// order, the size of the last batch, and where the batch fetched ahead
/// last begins.
#[derive(Default)]
pub struct Runs {
    folders: HashMap<Vec<u8>, Run>,
}

#[derive(Default)]
struct Run {
    next: Option<Vec<u8>>,
    batch: usize,
    /// The first file of the batch fetched ahead last: opening it (or a
    /// file after it) starts the next one.
    ahead_from: Option<Vec<u8>>,
    /// The last file fetched, now or ahead: the next batch ahead follows it.
    fetched_to: Option<Vec<u8>>,
}

/// What to fetch as a file is opened (see [`Runs::opened`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// How many of the files after it to fetch with it, before it is read.
    pub now: usize,
    /// How many files to fetch ahead, on a thread of their own, after the
    /// last file fetched (see [`Runs::fetched_to`]).
    pub ahead: usize,
}

impl Runs {
    /// Notes that absent file `name` of `folder` is opened to read, with
    /// `following` the absent name after it; what to fetch. Nothing unless
    /// it is opened in order. Its data `missing`, it is fetched now with
    /// twice the last batch (from [`FIRST_BATCH`] up to [`MOST_FILES`]),
    /// and twice that is fetched ahead; its data here, the next batch is
    /// fetched ahead once the reader reaches the batch fetched ahead last.
    pub fn opened(
        &mut self,
        folder: &[u8],
        name: &[u8],
        following: Option<&[u8]>,
        missing: bool,
    ) -> Step {
        if self.folders.len() >= MOST_FOLDERS && !self.folders.contains_key(folder) {
            self.folders.clear();
        }
        let run = self.folders.entry(folder.to_vec()).or_default();
        let in_order = run.next.as_deref() == Some(name);
        run.next = following.map(<[u8]>::to_vec);
        let grow = |batch: usize| (batch * 2).clamp(FIRST_BATCH, MOST_FILES);
        if !in_order {
            *run = Run {
                next: run.next.take(),
                ..Run::default()
            };
            return Step::default();
        }
        if missing {
            let now = grow(run.batch);
            run.batch = grow(now);
            run.ahead_from = None;
            run.fetched_to = None;
            return Step {
                now,
                ahead: run.batch,
            };
        }
        match &run.ahead_from {
            Some(first) if name >= first.as_slice() => {
                run.batch = grow(run.batch);
                run.ahead_from = None;
                Step {
                    now: 0,
                    ahead: run.batch,
                }
            }
            _ => Step::default(),
        }
    }

    /// Notes what was fetched for `folder` as a file of it was opened:
    /// the batch fetched now, up to `now_last`, and the batch fetched
    /// ahead, its first and last file. With neither, nothing changes: the
    /// batch ahead last stays the one whose first file starts the next
    /// (forgetting it at every open of a file already here made each
    /// batch after the first one the reader waited for).
    pub fn fetched(
        &mut self,
        folder: &[u8],
        now_last: Option<&[u8]>,
        ahead: Option<(&[u8], &[u8])>,
    ) {
        let Some(run) = self.folders.get_mut(folder) else {
            return;
        };
        match (now_last, ahead) {
            (_, Some((first, last))) => {
                run.ahead_from = Some(first.to_vec());
                run.fetched_to = Some(last.to_vec());
            }
            (Some(last), None) => {
                run.ahead_from = None;
                run.fetched_to = Some(last.to_vec());
            }
            (None, None) => {}
        }
    }

    /// The last file fetched in `folder`'s run, if any.
    pub fn fetched_to(&self, folder: &[u8]) -> Option<&[u8]> {
        self.folders.get(folder)?.fetched_to.as_deref()
    }
}

/// The bytes a batch may bring, under `cache_size` (`mount.cacheSize`).
pub fn most_bytes(cache_size: Option<u64>) -> u64 {
    cache_size.map_or(MOST_BYTES, |b| (b / 4).min(MOST_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(i: usize) -> Vec<u8> {
        format!("p{i:04}.jpg").into_bytes()
    }

    /// A fetch made while a folder of 2,000 was read: when (the file being
    /// opened), whether the reader waited for it, and which files it brought.
    type Fetch = (usize, bool, std::ops::Range<usize>);

    /// Opens files `range` of a folder of 2,000 in order, each missing
    /// unless an earlier fetch brought it, doing what each step says (a
    /// fetch ahead lands at once); the fetches made.
    fn copy(runs: &mut Runs, range: std::ops::Range<usize>) -> Vec<Fetch> {
        let mut fetches = Vec::new();
        let mut brought = vec![false; 2001];
        for i in range {
            let following = (i + 1 < 2000).then(|| name(i + 1));
            let step = runs.opened(b"day1", &name(i), following.as_deref(), !brought[i]);
            let mut last = None;
            if step.now > 0 {
                let to = (i + step.now).min(1999);
                brought[i..=to].iter_mut().for_each(|b| *b = true);
                fetches.push((i, true, i..to + 1));
                last = Some(to);
            }
            let mut ahead = None;
            if step.ahead > 0 {
                let after = last.unwrap_or_else(|| {
                    let to = runs.fetched_to(b"day1").unwrap();
                    String::from_utf8_lossy(&to[1..5]).parse().unwrap()
                });
                let (from, to) = (after + 1, (after + step.ahead).min(1999));
                if from <= to {
                    brought[from..=to].iter_mut().for_each(|b| *b = true);
                    fetches.push((i, false, from..to + 1));
                    ahead = Some((name(from), name(to)));
                }
            }
            // As the mount does at every open, whether or not anything was fetched.
            runs.fetched(
                b"day1",
                last.map(name).as_deref(),
                ahead.as_ref().map(|(f, l)| (&f[..], &l[..])),
            );
        }
        fetches
    }

    #[test]
    fn a_folder_read_in_order_is_fetched_ahead_in_doubling_batches() {
        let mut runs = Runs::default();
        let fetches = copy(&mut runs, 0..2000);
        // The first file alone (its chunks as read), the second with 8
        // more; from then on each batch is fetched ahead, as the reader
        // reaches the one before.
        assert_eq!(
            fetches[..6],
            [
                (1, true, 1..10),
                (1, false, 10..26),
                (10, false, 26..58),
                (26, false, 58..122),
                (58, false, 122..250),
                (122, false, 250..506),
            ]
        );
        assert!(fetches[6..]
            .iter()
            .all(|(_, waited, f)| !waited && f.len() <= MOST_FILES));
        // 2,000 files in 12 fetches, and the reader waited for one.
        assert_eq!(fetches.len(), 12);
        assert_eq!(fetches.iter().filter(|(_, waited, _)| *waited).count(), 1);
        assert_eq!(fetches.last().unwrap().2.end, 2000);
    }

    #[test]
    fn a_file_opened_out_of_order_is_fetched_alone_and_starts_again() {
        let mut runs = Runs::default();
        copy(&mut runs, 0..30);
        let step = runs.opened(b"day1", &name(500), Some(&name(501)), true);
        assert_eq!(step, Step::default());
        assert_eq!(runs.fetched_to(b"day1"), None, "the run is forgotten");
        assert_eq!(
            runs.opened(b"day1", &name(501), Some(&name(502)), true),
            Step {
                now: FIRST_BATCH,
                ahead: 2 * FIRST_BATCH
            }
        );
        // Another folder keeps its own order.
        let alone = runs.opened(b"day2", &name(501), Some(&name(502)), true);
        assert_eq!(alone, Step::default());
        assert_eq!(
            runs.opened(b"day2", &name(502), None, true).now,
            FIRST_BATCH
        );
        // The last file of a folder: nothing is expected after it.
        assert_eq!(
            runs.opened(b"day2", &name(503), None, true),
            Step::default()
        );
    }

    #[test]
    fn a_file_whose_data_is_here_fetches_nothing_before_the_batch_ahead() {
        let mut runs = Runs::default();
        runs.opened(b"d", &name(0), Some(&name(1)), true);
        runs.opened(b"d", &name(1), Some(&name(2)), true);
        runs.fetched(b"d", Some(&name(9)), Some((&name(10), &name(25))));
        for i in 2..10 {
            let step = runs.opened(b"d", &name(i), Some(&name(i + 1)), false);
            assert_eq!(step, Step::default(), "{i}");
        }
        // Reaching the batch fetched ahead starts the next.
        let step = runs.opened(b"d", &name(10), Some(&name(11)), false);
        assert_eq!(step, Step { now: 0, ahead: 32 });
        // A fetch ahead that failed: the file is missing, fetched now.
        runs.fetched(b"d", None, Some((&name(26), &name(57))));
        let step = runs.opened(b"d", &name(11), Some(&name(12)), true);
        assert_eq!(step.now, 64);
    }

    #[test]
    fn the_folders_remembered_are_bounded() {
        let mut runs = Runs::default();
        for f in 0..3 * MOST_FOLDERS {
            runs.opened(format!("f{f}").as_bytes(), b"a", Some(b"b"), true);
            assert!(runs.folders.len() <= MOST_FOLDERS);
        }
    }

    #[test]
    fn a_batch_takes_at_most_a_quarter_of_the_cache_budget() {
        assert_eq!(most_bytes(None), MOST_BYTES);
        assert_eq!(most_bytes(Some(1 << 40)), MOST_BYTES);
        assert_eq!(most_bytes(Some(40 << 20)), 10 << 20);
    }
}
