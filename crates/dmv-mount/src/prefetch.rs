//! When reading an absent file should bring its next siblings along: a
//! copy of a folder (`cp -r`, a backup, an import) opens its files in the
//! order the folder lists them, and a fetch per file is a round trip and a
//! pack each, where `dmv get` of the folder is one request. Files opened
//! in order are fetched in growing batches; a file opened out of order
//! (a viewer jumping to one photo) is fetched alone. Only files the mount
//! reads whole (under 16 MiB) are batched: of a film or a RAW a reader may
//! want only the start, which the chunks it reads bring.

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
/// order, and the size of the last batch.
#[derive(Default)]
pub struct Runs {
    folders: HashMap<Vec<u8>, Run>,
}

#[derive(Default)]
struct Run {
    next: Option<Vec<u8>>,
    batch: usize,
}

impl Runs {
    /// Notes that absent file `name` of `folder` is opened to read, with
    /// `following` the absent name after it; how many of the files after
    /// it to fetch with it: none unless it is opened in order and its
    /// data is `missing`, else twice the last batch, from
    /// [`FIRST_BATCH`] up to [`MOST_FILES`].
    pub fn opened(
        &mut self,
        folder: &[u8],
        name: &[u8],
        following: Option<&[u8]>,
        missing: bool,
    ) -> usize {
        if self.folders.len() >= MOST_FOLDERS && !self.folders.contains_key(folder) {
            self.folders.clear();
        }
        let run = self.folders.entry(folder.to_vec()).or_default();
        let in_order = run.next.as_deref() == Some(name);
        run.next = following.map(<[u8]>::to_vec);
        if !in_order {
            run.batch = 0;
            return 0;
        }
        if !missing {
            return 0;
        }
        run.batch = (run.batch * 2).clamp(FIRST_BATCH, MOST_FILES);
        run.batch
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

    /// Opens files `range` of a folder of 2,000 in order, each missing
    /// unless an earlier batch brought it; the batch sizes asked for.
    fn copy(runs: &mut Runs, range: std::ops::Range<usize>) -> Vec<(usize, usize)> {
        let mut batches = Vec::new();
        let mut brought_to = None;
        for i in range {
            let missing = brought_to.is_none_or(|to| i > to);
            let batch = runs.opened(b"day1", &name(i), Some(&name(i + 1)), missing);
            if missing {
                brought_to = Some(i + batch);
            }
            if batch > 0 {
                batches.push((i, batch));
            }
        }
        batches
    }

    #[test]
    fn a_folder_read_in_order_is_fetched_in_doubling_batches() {
        let mut runs = Runs::default();
        let batches = copy(&mut runs, 0..2000);
        // The first file alone, the second with 8 more, then 16 ... 256.
        assert_eq!(
            batches[..6],
            [(1, 8), (10, 16), (27, 32), (60, 64), (125, 128), (254, 256)]
        );
        assert!(batches[6..].iter().all(|&(_, b)| b == MOST_FILES));
        // 2,000 files in 13 fetches, not 2,000.
        assert_eq!(batches.len() + 1, 13);
    }

    #[test]
    fn a_file_opened_out_of_order_is_fetched_alone_and_starts_again() {
        let mut runs = Runs::default();
        copy(&mut runs, 0..30);
        assert_eq!(runs.opened(b"day1", &name(500), Some(&name(501)), true), 0);
        assert_eq!(
            runs.opened(b"day1", &name(501), Some(&name(502)), true),
            FIRST_BATCH
        );
        // Another folder keeps its own order.
        assert_eq!(runs.opened(b"day2", &name(501), Some(&name(502)), true), 0);
        assert_eq!(runs.opened(b"day2", &name(502), None, true), FIRST_BATCH);
        // The last file of a folder: nothing is expected after it.
        assert_eq!(runs.opened(b"day2", &name(503), None, true), 0);
    }

    #[test]
    fn a_file_whose_data_is_here_fetches_nothing_but_keeps_the_order() {
        let mut runs = Runs::default();
        runs.opened(b"d", &name(0), Some(&name(1)), true);
        assert_eq!(runs.opened(b"d", &name(1), Some(&name(2)), false), 0);
        assert_eq!(
            runs.opened(b"d", &name(2), Some(&name(3)), true),
            FIRST_BATCH
        );
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
