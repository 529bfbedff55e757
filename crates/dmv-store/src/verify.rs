//! Integrity checks. `verify_reachable` re-hashes every object reachable from
//! the given roots; `verify_packs` re-hashes every pack and every object in it.

use std::collections::HashMap;
use std::fs::File;

use crate::error::IoContext;
use crate::marks::Marks;
use crate::object::{decode, Commit, FileNode, Tag, TreeNode};
use crate::pack::{self, read_record};
use crate::{ObjectId, ObjectKind, Store, StoreError, StoreResult, Tally};

/// An object's kind and level (a file or tree node's; 0 for a tree leaf and
/// for the other kinds).
type Shape = (ObjectKind, u8);
/// An object's children, each with the shape its parent requires, if any.
type Children = Vec<(ObjectId, Option<Shape>)>;
/// What a visit checks: the parent, its shape, and the shape it requires.
type Wanted = Option<(ObjectId, Shape, Shape)>;

/// The object's level, and its children, each with the shape its parent
/// requires of it when it requires one: a file node's children are file
/// nodes one level below it (chunks below level 0), an inner tree node's
/// children are tree nodes one level below it (leaves at level 0).
fn edges(id: &ObjectId, kind: ObjectKind, bytes: &[u8]) -> StoreResult<(u8, Children)> {
    Ok(match kind {
        ObjectKind::Chunk => (0, Vec::new()),
        ObjectKind::FileNode => {
            let node: FileNode = decode(id, kind, bytes)?;
            let below = match node.level {
                0 => (ObjectKind::Chunk, 0),
                l => (ObjectKind::FileNode, l - 1),
            };
            (
                node.level,
                node.entries
                    .into_iter()
                    .map(|e| (e.id, Some(below)))
                    .collect(),
            )
        }
        ObjectKind::Tree => match decode::<TreeNode>(id, kind, bytes)? {
            TreeNode::Leaf(entries) => (
                0,
                entries
                    .into_iter()
                    .map(|e| (e.id, e.kind.is_file().then_some(FILE_DATA)))
                    .collect(),
            ),
            TreeNode::Inner { level, children } => {
                // An inner node of level 0 has no level its children could have.
                let below = level.checked_sub(1).map(|l| (ObjectKind::Tree, l));
                if below.is_none() {
                    return Err(StoreError::BadEncoding {
                        id: *id,
                        kind: kind.name(),
                        detail: "an inner node of level 0".into(),
                    });
                }
                (level, children.into_iter().map(|c| (c.id, below)).collect())
            }
        },
        ObjectKind::Commit => {
            let c: Commit = decode(id, kind, bytes)?;
            (
                0,
                std::iter::once(c.tree)
                    .chain(c.parents)
                    .map(|p| (p, None))
                    .collect(),
            )
        }
        ObjectKind::Tag => (
            0,
            vec![(
                decode::<Tag>(id, kind, bytes)?.target,
                Some((ObjectKind::Commit, 0)),
            )],
        ),
    })
}

/// What a tree leaf requires of a file's content: any chunk or file node
/// (checked against by [`is_file_data`] only, never compared as a shape).
const FILE_DATA: Shape = (ObjectKind::Chunk, u8::MAX);

/// Whether a parent's requirement marks the object as file data (a file's
/// content or anything below it), which a partial replica may lack.
fn is_file_data(wanted: &Wanted) -> bool {
    wanted.is_some_and(|(_, (parent_kind, _), want)| {
        parent_kind == ObjectKind::FileNode || want == FILE_DATA
    })
}

/// An object's shape as a mark: 0 not seen yet, 1 seen and unreadable,
/// else its kind and level.
fn seen_as(shape: Option<Shape>) -> u16 {
    shape.map_or(1, |(kind, level)| (kind as u16) << 8 | level as u16)
}

/// What [`seen_as`] made, if the object was seen.
fn shape_seen(mark: u16) -> Option<Option<Shape>> {
    match mark {
        0 => None,
        1 => Some(None),
        _ => Some(ObjectKind::from_u8((mark >> 8) as u8).map(|kind| (kind, mark as u8))),
    }
}

fn shape_name((kind, level): Shape) -> String {
    match kind {
        ObjectKind::FileNode | ObjectKind::Tree => {
            format!("a {} node of level {level}", kind.name())
        }
        other => format!("a {}", other.name()),
    }
}

/// One damaged object or file that a check found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Damage {
    /// The damaged object, when one can be named.
    pub object: Option<String>,
    /// The pack or index file holding it.
    pub file: Option<String>,
    /// What is wrong, as the error said it.
    pub detail: String,
}

/// What [`Store::verify_reachable`] or [`Store::verify_packs`] found.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct VerifyReport {
    /// Objects read back and re-hashed.
    pub objects_checked: u64,
    /// Their bytes as content.
    pub bytes_checked: u64,
    /// Packs checked whole (by [`Store::verify_packs`]).
    pub packs_checked: u64,
    /// Everything found damaged; empty when the store is sound.
    pub damage: Vec<Damage>,
    /// File data not here, in a replica that may lack it (by its slice or a drop).
    pub absent: Vec<String>,
    /// Leftovers of interrupted writes (harmless; gc removes them).
    pub garbage: Vec<String>,
}

impl VerifyReport {
    /// No damage found (absent data and garbage do not count).
    pub fn is_clean(&self) -> bool {
        self.damage.is_empty()
    }

    fn record(&mut self, err: StoreError) {
        let (object, file) = match &err {
            StoreError::DamagedObject { id, pack, .. } => (Some(id.to_hex()), Some(pack.clone())),
            StoreError::NotFound { id } => (Some(id.to_hex()), None),
            StoreError::BadEncoding { id, .. } => (Some(id.to_hex()), None),
            StoreError::CorruptFile { path, .. } | StoreError::Io { path, .. } => {
                (None, Some(path.display().to_string()))
            }
            _ => (None, None),
        };
        self.damage.push(Damage {
            object,
            file,
            detail: err.to_string(),
        });
    }
}

impl Store {
    /// Walks from `roots` (iteratively), reading (and so re-hashing) every
    /// object once, and checks that file and tree nodes list nodes exactly
    /// one level below them, as every reader requires.
    /// With `absent_data_ok` (a partial replica), file data that is not
    /// here is listed in `absent`, not as damage.
    pub fn verify_reachable(
        &self,
        roots: &[ObjectId],
        absent_data_ok: bool,
        tally: &Tally<'_>,
    ) -> StoreResult<VerifyReport> {
        // Held like a writer's, so neither gc nor an auto-repack moves packs
        // under the check (a vanished pack would read as damage). A store we
        // may not write to has no lock to take, and nobody moves its packs.
        let _no_gc = self.hold_off_gc().ok();
        let mut report = VerifyReport::default();
        // Objects read so far, with their shape (see `seen_as`), by place in the indexes...
        let mut seen: Marks<u16> = Marks::new(self.indexes());
        // ...or by id, those no index held when the check began (absent, or stored since).
        let mut seen_outside: HashMap<ObjectId, Option<Shape>> = HashMap::new();
        // Objects to visit, with their parent and the shape it requires;
        // roots one at a time (at a million staged files, a stack of them all was ~70 MB).
        let mut roots = roots.iter();
        let mut stack: Vec<(ObjectId, Wanted)> = Vec::new();
        while let Some((id, wanted)) = stack.pop().or_else(|| roots.next().map(|r| (*r, None))) {
            let place = seen.slot(&id);
            let known = match place {
                Some(slot) => shape_seen(seen.get(slot)),
                None => seen_outside.get(&id).copied(),
            };
            let shape = match known {
                Some(shape) => shape,
                None => {
                    let shape = match self.read(&id) {
                        Ok((kind, bytes)) => {
                            report.objects_checked += 1;
                            report.bytes_checked += bytes.len() as u64;
                            tally.add(bytes.len() as u64);
                            match edges(&id, kind, &bytes) {
                                Ok((level, kids)) => {
                                    stack.extend(kids.into_iter().map(|(kid, want)| {
                                        (kid, want.map(|w| (id, (kind, level), w)))
                                    }));
                                    Some((kind, level))
                                }
                                Err(e) => {
                                    report.record(e);
                                    None
                                }
                            }
                        }
                        Err(StoreError::NotFound { id })
                            if absent_data_ok && is_file_data(&wanted) =>
                        {
                            report.absent.push(id.to_hex());
                            None
                        }
                        Err(e) => {
                            report.record(e);
                            None
                        }
                    };
                    match place {
                        Some(slot) => seen.set(slot, seen_as(shape)),
                        None => drop(seen_outside.insert(id, shape)),
                    }
                    shape
                }
            };
            if let (Some(actual), Some((parent, parent_shape, want))) = (shape, wanted) {
                if actual != want
                    && !(want == FILE_DATA
                        && matches!(actual.0, ObjectKind::Chunk | ObjectKind::FileNode))
                {
                    let detail = format!(
                        "it is {} but {parent}, {}, lists it where {} belongs",
                        shape_name(actual),
                        shape_name(parent_shape),
                        shape_name(want)
                    );
                    report.record(StoreError::BadEncoding {
                        id,
                        kind: actual.0.name(),
                        detail,
                    });
                }
            }
        }
        Ok(report)
    }

    /// Every pack: checksum, table of contents, and every record re-hashed;
    /// every index: checksum, order, and agreement with its pack.
    pub fn verify_packs(&self, tally: &Tally<'_>) -> StoreResult<VerifyReport> {
        // Held like a writer's, so neither gc nor an auto-repack moves packs
        // under the check (a vanished pack would read as damage). A store we
        // may not write to has no lock to take, and nobody moves its packs.
        let _no_gc = self.hold_off_gc().ok();
        let mut report = VerifyReport::default();
        let dir = self.packs_dir().to_path_buf();
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .at(&dir)?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        names.sort();
        for path in names {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with("tmp-") || name.contains(".tmp-") {
                report.garbage.push(format!(
                    "{name} is a temporary file of an interrupted write"
                ));
            } else if name.ends_with(".pack") && name.starts_with("pack-") {
                report.packs_checked += 1;
                if !path.with_extension("idx").exists() {
                    report.garbage.push(format!(
                        "{name} has no index (an interrupted write; gc re-indexes or removes it)"
                    ));
                    continue;
                }
                let file = match File::open(&path) {
                    Ok(f) => f,
                    Err(e) => {
                        report.record(StoreError::io(&path, e));
                        continue;
                    }
                };
                if let Err(e) = pack::verify_checksum(&file, &path) {
                    report.record(e);
                }
                match pack::read_toc(&file, &path) {
                    Ok(entries) => {
                        for e in entries {
                            match read_record(&file, &name, &e) {
                                Ok(data) => {
                                    report.objects_checked += 1;
                                    report.bytes_checked += data.len() as u64;
                                    tally.add(data.len() as u64);
                                }
                                Err(err) => report.record(err),
                            }
                        }
                    }
                    Err(e) => report.record(e),
                }
            } else if name.ends_with(".idx") || name == crate::store::MULTI_PACK_INDEX {
                match crate::index::PackIndex::open(&path).and_then(|i| i.verify().map(|_| i)) {
                    Ok(idx) => {
                        for p in idx.packs() {
                            if !dir.join(pack::pack_file_name(p)).exists() {
                                report.record(StoreError::CorruptFile {
                                    path: path.clone(),
                                    detail: format!("names missing pack {}", p.short()),
                                });
                            }
                        }
                    }
                    Err(e) => report.record(e),
                }
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_seen_is_kept_in_two_bytes_and_read_back() {
        assert_eq!(shape_seen(0), None);
        assert_eq!((seen_as(None), shape_seen(1)), (1, Some(None)));
        assert_eq!(seen_as(Some((ObjectKind::Tree, 2))), 0x0302);
        for kind in [
            ObjectKind::Chunk,
            ObjectKind::FileNode,
            ObjectKind::Tree,
            ObjectKind::Commit,
        ] {
            for level in [0, 1, 200, u8::MAX] {
                assert_eq!(
                    shape_seen(seen_as(Some((kind, level)))),
                    Some(Some((kind, level)))
                );
            }
        }
    }
}
