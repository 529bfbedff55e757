//! A consistent snapshot of the table stack and a merged view over it.

use std::path::Path;
use std::time::Duration;

use crate::format::*;
use crate::lock::{parse_list, List, LIST};
use crate::table::{Table, TableIter};
use crate::value::RefValue;
use crate::RefError;

pub(crate) struct Stack {
    /// Oldest (bottom) first; later tables shadow earlier ones.
    pub tables: Vec<Table>,
}

pub(crate) fn read_list(dir: &Path) -> Result<List, RefError> {
    let path = dir.join(LIST);
    let content = match std::fs::read_to_string(&path) {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RefError::NotInitialized(dir.to_path_buf()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(RefError::CorruptList {
                path,
                reason: "not UTF-8".into(),
            })
        }
        Err(e) => return Err(RefError::io(&path, e)),
    };
    parse_list(&content).ok_or(RefError::CorruptList {
        path,
        reason:
            "a line is not a table file name, or an inline table is not the last line or not base64"
                .into(),
    })
}

/// Opens every listed table. Once open, a table stays readable even if a
/// compaction unlinks it, so the snapshot is consistent; a table that is
/// already gone means the list changed under us: read it again.
pub(crate) fn open_stack(dir: &Path) -> Result<Stack, RefError> {
    let mut missing_from: Option<(Vec<String>, String)> = None;
    for attempt in 0..100u64 {
        let list = read_list(dir)?;
        if let Some((prev, table)) = &missing_from {
            // Table names carry a random part, so a list that reads the same
            // again has not been replaced: its table is really gone.
            if *prev == list.names {
                return Err(RefError::CorruptList {
                    path: dir.join(LIST),
                    reason: format!("it names table {table}, which does not exist"),
                });
            }
        }
        let mut tables = Vec::with_capacity(list.names.len() + 1);
        let mut vanished = None;
        for n in &list.names {
            match Table::open(&dir.join(n)) {
                Ok(t) => tables.push(t),
                Err(RefError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    vanished = Some(n.clone());
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        match vanished {
            None => {
                if let Some(bytes) = list.inline {
                    tables.push(Table::inline(&dir.join(LIST), bytes)?);
                }
                return Ok(Stack { tables });
            }
            Some(t) => missing_from = Some((list.names, t)),
        }
        std::thread::sleep(Duration::from_millis(attempt.min(20)));
    }
    Err(RefError::Unstable(dir.to_path_buf()))
}

impl Stack {
    pub(crate) fn max_index(&self) -> u64 {
        self.tables
            .iter()
            .map(|t| t.footer.max_index)
            .max()
            .unwrap_or(0)
    }

    pub(crate) fn ref_records(&self) -> u64 {
        self.tables.iter().map(|t| t.footer.ref_records).sum()
    }

    /// Newest table first; the first table that knows the key decides.
    pub(crate) fn get_ref(&self, name: &str) -> Result<Option<RefValue>, RefError> {
        let mut key = Vec::new();
        ref_key(name, &mut key);
        for t in self.tables.iter().rev() {
            if let Some((vtype, val)) = t.get(&key)? {
                return decode_ref(vtype, &val).map_err(|r| RefError::corrupt(&t.path, r));
            }
        }
        Ok(None)
    }
}

/// K-way merge of table iterators; on equal keys the newest table wins and
/// the others are skipped. Stacks are a handful of tables deep, so picking
/// the minimum by a linear scan beats a heap.
pub(crate) struct Merged<'s> {
    iters: Vec<TableIter<'s>>,
    tables: &'s [Table],
    cur: Option<usize>,
    scratch: Vec<u8>,
}

impl<'s> Merged<'s> {
    pub(crate) fn new(tables: &'s [Table], start: &[u8]) -> Result<Self, RefError> {
        let mut iters = Vec::with_capacity(tables.len());
        for t in tables {
            iters.push(t.seek(start)?);
        }
        let mut m = Merged {
            iters,
            tables,
            cur: None,
            scratch: Vec::new(),
        };
        m.pick();
        Ok(m)
    }

    fn pick(&mut self) {
        let mut best: Option<(usize, &[u8])> = None;
        for (i, it) in self.iters.iter().enumerate() {
            if let Some((k, _, _)) = it.current() {
                match best {
                    Some((_, bk)) if k > bk => {}
                    // `>=` on ties: a later (newer) table replaces the pick.
                    _ => best = Some((i, k)),
                }
            }
        }
        self.cur = best.map(|b| b.0);
    }

    /// (key, value type, value, path of the table it came from)
    pub(crate) fn current(&self) -> Option<(&[u8], u8, &[u8], &'s Path)> {
        let i = self.cur?;
        let (k, t, v) = self.iters[i].current()?;
        Some((k, t, v, self.tables[i].path.as_path()))
    }

    pub(crate) fn advance(&mut self) -> Result<(), RefError> {
        let Some(i) = self.cur else { return Ok(()) };
        self.scratch.clear();
        if let Some((k, _, _)) = self.iters[i].current() {
            self.scratch.extend_from_slice(k);
        }
        for it in self.iters.iter_mut() {
            if matches!(it.current(), Some((k, _, _)) if k == self.scratch.as_slice()) {
                it.advance()?;
            }
        }
        self.pick();
        Ok(())
    }
}
