//! The kernel's table of mounts (`/proc/self/mountinfo` on Linux,
//! getfsstat on macOS): which folders are mount points, and which are
//! worktree mounts of which replica, so that a command started inside one
//! works in the replica it shows (the mount hides the replica's `.dmv`).

#[cfg(target_os = "linux")]
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::status::running_mounts;

/// Bytes of Linux's table read at most: some ten thousand mounts.
#[cfg(target_os = "linux")]
const MOST_READ: u64 = 4 << 20;
/// Mounts of macOS's table read at most.
#[cfg(target_os = "macos")]
const MOST_MOUNTS: usize = 10_000;
/// The kernel's type for the mounts DMV makes: on Linux `fuse.` and
/// their subtype; on macOS every macFUSE mount's (older: osxfuse), which
/// the replica's own list of mounts then tells apart.
#[cfg(target_os = "linux")]
const DMV_TYPES: &[&[u8]] = &[b"fuse.dmv"];
#[cfg(target_os = "macos")]
const DMV_TYPES: &[&[u8]] = &[b"macfuse", b"osxfuse"];
/// What a worktree mount shows, as its status says.
pub(crate) const WORKTREE: &str = "worktree";

/// One line of the table.
struct Mount {
    point: Vec<u8>,
    fs_type: Vec<u8>,
    source: Vec<u8>,
}

/// The mounts now (none known where the table cannot be read).
#[cfg(target_os = "linux")]
fn mounts_now() -> Vec<Mount> {
    let mut table = Vec::new();
    if let Ok(file) = std::fs::File::open("/proc/self/mountinfo") {
        // Unreadable (no /proc): no mounts known.
        let _ = file.take(MOST_READ).read_to_end(&mut table);
    }
    mounts(&table).collect()
}

/// The mounts now, from getfsstat (none known where it fails).
#[cfg(target_os = "macos")]
fn mounts_now() -> Vec<Mount> {
    // SAFETY: a null buffer asks only for the number of mounts.
    let count = unsafe { libc::getfsstat(std::ptr::null_mut(), 0, libc::MNT_NOWAIT) };
    // Room for a few mounted meanwhile.
    let room = usize::try_from(count)
        .unwrap_or(0)
        .saturating_add(8)
        .min(MOST_MOUNTS);
    // SAFETY: statfs is plain data; all zeroes is a valid value.
    let mut table: Vec<libc::statfs> = vec![unsafe { std::mem::zeroed() }; room];
    let bytes = (room * std::mem::size_of::<libc::statfs>()) as libc::c_int;
    // SAFETY: the buffer holds `bytes` bytes of statfs records.
    let got = unsafe { libc::getfsstat(table.as_mut_ptr(), bytes, libc::MNT_NOWAIT) };
    table.truncate(usize::try_from(got).unwrap_or(0));
    let text = |field: &[libc::c_char]| -> Vec<u8> {
        field
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect()
    };
    table
        .iter()
        .map(|fs| Mount {
            point: text(&fs.f_mntonname),
            fs_type: text(&fs.f_fstypename),
            source: text(&fs.f_mntfromname),
        })
        .collect()
}

/// The lines of Linux's `table`: `ID PARENT MAJ:MIN ROOT POINT OPTIONS
/// [TAGS…] - TYPE SOURCE OPTIONS`, with space, tab, newline and backslash
/// escaped in octal. Malformed lines are passed over.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn mounts(table: &[u8]) -> impl Iterator<Item = Mount> + '_ {
    table.split(|b| *b == b'\n').filter_map(|line| {
        let fields: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
        let dash = fields.iter().position(|f| *f == b"-")?;
        if dash < 6 {
            return None;
        }
        Some(Mount {
            point: unescape(fields[4]),
            fs_type: unescape(fields.get(dash + 1)?),
            source: unescape(fields.get(dash + 2)?),
        })
    })
}

/// Whether `dir` (canonical) is a mount point.
pub fn is_mount_point(dir: &Path) -> bool {
    let wanted = dir.as_os_str().as_bytes();
    mounts_now().into_iter().any(|m| m.point == wanted)
}

/// Where folder `dir` (canonical) lies in the replica whose working tree a
/// worktree mount at or above it shows; none outside such a mount. The
/// mount names its replica as its source, and the replica's own list of
/// running mounts must name the mount: a mount someone else made, naming
/// a replica that is not behind it, sends no command there.
pub fn in_replica_behind(dir: &Path) -> Option<PathBuf> {
    in_replica_behind_by(mounts_now(), dir)
}

/// [`in_replica_behind`], as the mount table `table` says.
fn in_replica_behind_by(table: impl IntoIterator<Item = Mount>, dir: &Path) -> Option<PathBuf> {
    let (point, replica) = innermost_dmv_mount(table, dir)?;
    let point = PathBuf::from(std::ffi::OsStr::from_bytes(&point));
    let replica = PathBuf::from(std::ffi::OsStr::from_bytes(&replica));
    let shown_there = running_mounts(&replica.join(".dmv"))
        .iter()
        .any(|m| m.shows == WORKTREE && m.dir == point);
    match shown_there {
        true => Some(replica.join(dir.strip_prefix(&point).ok()?)),
        false => None,
    }
}

/// The process serving the DMV mount at `dir` (canonical), as the list of
/// running mounts of its replica says: the replica the mount names as its
/// source (a worktree mount), else `replica` (the one a command runs in).
pub fn mount_process(dir: &Path, replica: Option<&Path>) -> Option<u32> {
    let wanted = dir.as_os_str().as_bytes();
    let named = mounts_now()
        .into_iter()
        .filter(|m| DMV_TYPES.contains(&&m.fs_type[..]) && m.point == wanted)
        .find(|m| m.source.starts_with(b"/"))
        .map(|m| PathBuf::from(std::ffi::OsStr::from_bytes(&m.source)));
    named
        .iter()
        .map(PathBuf::as_path)
        .chain(replica)
        .flat_map(|root| running_mounts(&root.join(".dmv")))
        .find(|m| m.dir == dir)
        .map(|m| m.pid)
}

/// The innermost DMV mount at or above `dir` whose source is an absolute
/// path: its mount point and its source, the replica it shows.
fn innermost_dmv_mount(
    table: impl IntoIterator<Item = Mount>,
    dir: &Path,
) -> Option<(Vec<u8>, Vec<u8>)> {
    table
        .into_iter()
        .filter(|m| DMV_TYPES.contains(&&m.fs_type[..]) && m.source.starts_with(b"/"))
        .filter(|m| dir.starts_with(std::ffi::OsStr::from_bytes(&m.point)))
        .max_by_key(|m| m.point.len())
        .map(|m| (m.point, m.source))
}

/// A field with its octal escapes (`\040` for a space) undone.
fn unescape(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let octal = text
            .get(i + 1..i + 4)
            .filter(|d| text[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(
                    d.iter()
                        .fold(0u8, |n, c| n.wrapping_mul(8).wrapping_add(c - b'0')),
                );
                i += 4;
            }
            None => {
                out.push(text[i]);
                i += 1;
            }
        }
    }
    out
}

/// The source a worktree mount of the replica at `root` gives the kernel:
/// the replica's path, when the mount options can carry it as it is (no
/// comma, which separates them, and nothing the table escapes).
pub(crate) fn source_naming(root: &Path) -> String {
    match root.to_str() {
        Some(path) if !path.contains([',', ' ', '\t', '\n', '\\']) => path.to_string(),
        _ => "dmv".to_string(),
    }
}

// The tables below are Linux's.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    const TABLE: &[u8] = b"\
22 1 0:21 / /proc rw,nosuid - proc proc rw
30 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
41 30 0:40 / /home/ana/phone\\040view rw,nosuid,nodev shared:7 - fuse.dmv /home/ana/phone rw,user_id=0
42 41 0:41 / /home/ana/phone\\040view/inner rw - fuse.dmv /srv/other rw
43 30 0:42 / /mnt/rev ro - fuse.dmv dmv ro
garbage line
44 30 0:43 / /mnt/short -
";

    #[test]
    fn the_innermost_dmv_mount_above_a_folder_names_its_replica() {
        let found = |dir: &str| innermost_dmv_mount(mounts(TABLE), Path::new(dir));
        assert_eq!(
            found("/home/ana/phone view/shoot/day 1"),
            Some((
                b"/home/ana/phone view".to_vec(),
                b"/home/ana/phone".to_vec()
            ))
        );
        assert_eq!(
            found("/home/ana/phone view/inner/x"),
            Some((
                b"/home/ana/phone view/inner".to_vec(),
                b"/srv/other".to_vec()
            ))
        );
        // A read-only mount names no replica; other file systems are no mounts of DMV's.
        assert_eq!(found("/mnt/rev/a"), None);
        assert_eq!(found("/proc/self"), None);
        // A folder whose name only begins like the mount point's is not inside it.
        assert_eq!(found("/home/ana/phone viewer"), None);
    }

    #[test]
    fn mount_points_are_read_with_their_escapes_undone() {
        let points: Vec<Vec<u8>> = mounts(TABLE).map(|m| m.point).collect();
        assert_eq!(
            points,
            [
                &b"/proc"[..],
                b"/",
                b"/home/ana/phone view",
                b"/home/ana/phone view/inner",
                b"/mnt/rev"
            ]
        );
        assert_eq!(unescape(b"a\\134b\\011\\12"), b"a\\b\t\\12");
    }

    #[test]
    fn a_replica_path_the_options_cannot_carry_is_not_given() {
        assert_eq!(
            source_naming(Path::new("/home/ana/phone")),
            "/home/ana/phone"
        );
        assert_eq!(source_naming(Path::new("/home/ana/Shoot, day 1")), "dmv");
        assert_eq!(source_naming(Path::new("/home/ana/my phone")), "dmv");
    }

    /// The attack: another local user mounts a folder of type `fuse.dmv`
    /// naming someone's replica as its source. A command started inside it
    /// works there only once the replica's own status names that mount.
    #[test]
    fn a_mount_naming_a_replica_counts_only_once_the_replica_lists_it() {
        let t = tempfile::tempdir().unwrap();
        let replica = t.path().join("phone");
        std::fs::create_dir_all(replica.join(".dmv")).unwrap();
        let table = format!(
            "41 30 0:40 / /srv/trap rw - fuse.dmv {} rw\n",
            replica.display()
        );
        let inside = Path::new("/srv/trap/shoot");
        assert_eq!(in_replica_behind_by(mounts(table.as_bytes()), inside), None);
        // The replica's status names another folder: still refused.
        let live = crate::status::Live::default();
        crate::status::MountStatus::now(Path::new("/srv/elsewhere"), WORKTREE, 0, &live)
            .save(&replica.join(".dmv"));
        assert_eq!(in_replica_behind_by(mounts(table.as_bytes()), inside), None);
        // A read-only mount of that very folder is no working tree.
        crate::status::MountStatus::now(Path::new("/srv/trap"), "main", 0, &live)
            .save(&replica.join(".dmv"));
        assert_eq!(in_replica_behind_by(mounts(table.as_bytes()), inside), None);
        // Its own worktree mount of that folder, running: taken.
        crate::status::MountStatus::now(Path::new("/srv/trap"), WORKTREE, 0, &live)
            .save(&replica.join(".dmv"));
        assert_eq!(
            in_replica_behind_by(mounts(table.as_bytes()), inside),
            Some(replica.join("shoot"))
        );
        assert_eq!(in_replica_behind(t.path()), None, "no mount above it");
    }
}
