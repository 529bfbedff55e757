//! Writing a pack straight to the disk (`O_DIRECT`), past the page cache.
//!
//! A pack is written once, hashed on the way, and rarely read back soon.
//! Through the page cache every byte is first copied into freshly allocated
//! pages and written back by the kernel later. On the virtual machines DMV is
//! measured on, touching fresh pages is what costs: 1 GiB written and synced
//! took 2.2-3.0 s buffered (nearly all of it kernel time in the copy) against
//! 0.4-0.6 s direct (see BENCHMARKS.md and the issue notes). Direct writes
//! reuse a few aligned buffers, and an I/O thread keeps the disk busy while
//! the caller fills the next buffer, so the disk works while we chunk and hash.
//!
//! A file system that refuses direct I/O (at open or at a write) gets the same
//! bytes through the page cache instead: direct I/O is a speed-up, never a
//! requirement.

use std::fs::File;
use std::io;
#[cfg(all(target_os = "linux", not(dmv_portable)))]
use std::os::unix::io::AsRawFd;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};
use dmv_os::FileExt;

/// Offsets, lengths and buffer addresses of direct I/O must be multiples of
/// the device's logical block size; 4096 covers every common device.
const ALIGN: usize = 4096;
/// Bytes per write handed to the I/O thread. 1 MiB adds a 1 GiB file as
/// fast as 2 MiB did here (1.01-1.21 s against 1.06-1.17 s, four runs each)
/// and keeps 4 MiB less in every writing command (the server of a push of
/// 100,000 files: 23.5 MB against 28.0).
const BLOCK: usize = 1 << 20;
/// Files smaller than this are written through the page cache: an I/O
/// thread and its buffers would cost them more than the copy.
const DIRECT_FILES_FROM: u64 = 2 << 20;
/// Buffers in rotation: one being filled, the others queued or being written.
const BUFFERS: usize = 4;
/// Writes in flight at once into a temporary file. The virtual disks DMV is
/// measured on take more with two than with one (1 GiB direct and synced
/// into one preallocated file: 0.76-0.82 s against 0.84-0.88 s), where a
/// lone writer waits out each write's round trip to the host before sending
/// the next.
const TEMPORARY_WRITERS: usize = 2;
/// Space is allocated this far ahead of the writes to a temporary file, so
/// that they land inside it: a direct write past the end of an ext4 file
/// holds the inode's lock until it completes, and would make the writers
/// take turns. Not in a working-tree file, which someone may look at (or a
/// kill leave) while it is written: it must not show zeros it never held.
const ALLOCATE_AHEAD: u64 = 16 << 20;

/// A `BLOCK`-sized window of a vector, starting at an `ALIGN`ed address.
struct AlignedBuf {
    /// Its capacity is reserved up front, so it never moves; its length is
    /// how far it was ever written (at least `start + len`). Zeroed whole
    /// when made, 1 MiB of page faults went into every pack, the one
    /// a `get` of a 1 KiB file writes included.
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn new() -> AlignedBuf {
        let mut storage = Vec::with_capacity(BLOCK + ALIGN);
        let start = (ALIGN - storage.as_ptr() as usize % ALIGN) % ALIGN;
        storage.resize(start, 0);
        AlignedBuf {
            storage,
            start,
            len: 0,
        }
    }

    /// Makes `storage[..end]` initialised, zeroing what never was; within
    /// the reserved capacity, so the address stays aligned.
    fn initialise_to(&mut self, end: usize) {
        debug_assert!(end <= self.storage.capacity());
        if self.storage.len() < end {
            self.storage.resize(end, 0);
        }
    }

    fn is_full(&self) -> bool {
        self.len == BLOCK
    }

    /// Copies as much of `bytes` as fits; returns how much that was.
    fn fill(&mut self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(BLOCK - self.len);
        let at = self.start + self.len;
        // Written before: copied over; beyond: appended, never zeroed first.
        let over = self.storage.len().clamp(at, at + n) - at;
        self.storage[at..at + over].copy_from_slice(&bytes[..over]);
        self.storage.extend_from_slice(&bytes[over..n]);
        self.len += n;
        n
    }

    fn filled(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    /// The filled part, zero-padded to a multiple of `ALIGN`, for the last
    /// write of a file (the padding is cut off by `set_len` afterwards).
    fn padded(&mut self) -> &[u8] {
        let padded_len = self.len.next_multiple_of(ALIGN);
        let at = self.start + self.len;
        self.initialise_to(self.start + padded_len);
        self.storage[at..self.start + padded_len].fill(0);
        &self.storage[self.start..self.start + padded_len]
    }
}

/// Sets or clears `O_DIRECT` on an open file.
#[cfg(all(target_os = "linux", not(dmv_portable)))]
fn set_direct(file: &File, on: bool) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl with F_GETFL/F_SETFL reads and sets integer flags of a
    // file descriptor we own; a bad request is an error return, not UB.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        let flags = if on {
            flags | libc::O_DIRECT
        } else {
            flags & !libc::O_DIRECT
        };
        if libc::fcntl(fd, libc::F_SETFL, flags) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Elsewhere there is no `O_DIRECT`: files are written through the page cache.
#[cfg(not(all(target_os = "linux", not(dmv_portable))))]
fn set_direct(_file: &File, on: bool) -> io::Result<()> {
    match on {
        true => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "direct I/O is used on Linux only",
        )),
        false => Ok(()),
    }
}

/// Writes `buf` at `offset`; if the file system rejects the direct write,
/// switches the file to buffered I/O for good and writes the exact bytes.
fn write_block(
    file: &File,
    buf: &mut AlignedBuf,
    offset: u64,
    direct: &mut bool,
) -> io::Result<()> {
    if *direct {
        // Only the last block of a file is short; its padding goes past the
        // end and is cut off when the file is finished.
        match file.write_all_at(buf.padded(), offset) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                set_direct(file, false)?;
                *direct = false;
            }
            Err(e) => return Err(e),
        }
    }
    file.write_all_at(buf.filled(), offset)
}

/// Makes the file at least `len` bytes long with its blocks allocated
/// (unwritten: they read as zeros). Only a hint: where the file system
/// cannot, the writes extend the file themselves.
#[cfg(all(target_os = "linux", not(dmv_portable)))]
fn allocate(file: &File, len: u64) {
    let Ok(len) = libc::off_t::try_from(len) else {
        return;
    };
    // SAFETY: fallocate on a file descriptor we own, mode 0, within off_t; a
    // refusal is an error return, which we ignore.
    let _ = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
}

/// Elsewhere the writes extend the file themselves.
#[cfg(not(all(target_os = "linux", not(dmv_portable))))]
fn allocate(_file: &File, _len: u64) {}

/// Appends bytes to a file with direct I/O, in the background.
pub struct DirectWriter {
    file: Option<File>,
    current: AlignedBuf,
    /// Bytes handed to the I/O threads so far: the file offset of `current`.
    queued: u64,
    /// How long `allocate` has made the file (cut back to the bytes written
    /// at the end).
    allocated: u64,
    /// Started by the first full buffer; a pack that fits in one never starts them.
    io: Option<IoThreads>,
    /// Buffers made so far (at most `BUFFERS`).
    made: usize,
    direct: bool,
    /// I/O threads to start, and how far ahead to allocate (0: not at all).
    writers: usize,
    ahead: u64,
}

struct IoThreads {
    file: std::sync::Arc<File>,
    to_write: Sender<(AlignedBuf, u64)>,
    written: Receiver<AlignedBuf>,
    /// Each thread ends saying whether its writes were still direct.
    handles: Vec<JoinHandle<io::Result<bool>>>,
}

impl IoThreads {
    /// Waits for every write; the file, and whether all writes were direct,
    /// or the first error.
    fn join(self) -> io::Result<(File, bool)> {
        drop(self.to_write);
        drop(self.written);
        let mut direct = true;
        let mut failed = None;
        for handle in self.handles {
            match handle.join() {
                Ok(Ok(still)) => direct &= still,
                Ok(Err(e)) => failed = failed.or(Some(e)),
                Err(_) => {
                    failed = failed.or(Some(io::Error::other(
                        "the pack writer's I/O thread panicked",
                    )))
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        let file = std::sync::Arc::try_unwrap(self.file)
            .map_err(|_| io::Error::other("the pack writer's I/O threads still hold the file"))?;
        Ok((file, direct))
    }
}

impl DirectWriter {
    /// Switches `file` (empty, opened for writing) to direct I/O; gives it
    /// back unchanged when its file system does not do direct I/O.
    pub fn new(file: File) -> Result<DirectWriter, File> {
        if set_direct(&file, true).is_err() {
            return Err(file);
        }
        Ok(DirectWriter {
            file: Some(file),
            current: AlignedBuf::new(),
            queued: 0,
            allocated: 0,
            io: None,
            made: 1,
            direct: true,
            writers: 1,
            ahead: 0,
        })
    }

    /// As `new`, for a file nobody reads until it is finished (a pack being
    /// written under a temporary name): two writes in flight, into space
    /// allocated ahead (a crash may leave it ending in zeros).
    pub fn temporary(file: File) -> Result<DirectWriter, File> {
        DirectWriter::new(file).map(|w| DirectWriter {
            writers: TEMPORARY_WRITERS,
            ahead: ALLOCATE_AHEAD,
            ..w
        })
    }

    pub fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let n = self.current.fill(bytes);
            bytes = &bytes[n..];
            if self.current.is_full() {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    /// Queues the full current buffer for writing and takes a free one.
    fn hand_over(&mut self) -> io::Result<()> {
        if self.io.is_none() {
            let file = self
                .file
                .take()
                .ok_or_else(|| io::Error::other("direct writer used after a failure"))?;
            let file = std::sync::Arc::new(file);
            let (to_write, queue) = bounded::<(AlignedBuf, u64)>(BUFFERS);
            let (give_back, written) = bounded::<AlignedBuf>(BUFFERS);
            let mut handles = Vec::with_capacity(self.writers);
            for _ in 0..self.writers {
                let (file, queue, give_back) = (file.clone(), queue.clone(), give_back.clone());
                let mut direct = self.direct;
                let spawned = std::thread::Builder::new()
                    .name("dmv-pack-io".into())
                    .spawn(move || {
                        for (mut buf, offset) in queue {
                            write_block(&file, &mut buf, offset, &mut direct)?;
                            buf.len = 0;
                            let _ = give_back.send(buf);
                        }
                        Ok(direct)
                    });
                match spawned {
                    Ok(handle) => handles.push(handle),
                    // One writer is enough; none is an error.
                    Err(e) if handles.is_empty() => return Err(e),
                    Err(_) => break,
                }
            }
            self.io = Some(IoThreads {
                file,
                to_write,
                written,
                handles,
            });
        }
        let io = self.io.as_ref().expect("started above");
        // A buffer is made only when none has come back: a writer slower
        // than the disk (a push arriving through a pipe) keeps two.
        let next = match io.written.try_recv() {
            Ok(buf) => Some(buf),
            Err(_) if self.made < BUFFERS => {
                self.made += 1;
                Some(AlignedBuf::new())
            }
            Err(_) => io.written.recv().ok(),
        };
        let Some(next) = next else {
            return Err(self.failure());
        };
        let full = std::mem::replace(&mut self.current, next);
        let len = full.len as u64;
        if self.ahead > 0 && self.queued + len > self.allocated {
            self.allocated = self.queued + len + self.ahead;
            allocate(&io.file, self.allocated);
        }
        if io.to_write.send((full, self.queued)).is_err() {
            return Err(self.failure());
        }
        self.queued += len;
        Ok(())
    }

    /// The I/O threads have stopped early: their error.
    fn failure(&mut self) -> io::Error {
        match self.io.take().map(IoThreads::join) {
            Some(Err(e)) => e,
            _ => io::Error::other("the pack writer's I/O thread stopped"),
        }
    }

    /// Writes what is left, waits for every write, and cuts the file to the
    /// exact length. The caller syncs it.
    pub fn finish(mut self) -> io::Result<File> {
        let (file, mut direct) = match self.io.take() {
            // All of it fits in one buffer (a commit of a few small files):
            // through the page cache, the bytes reach the disk with the
            // caller's sync; a direct write would wait for the disk once
            // more, and its padding would then have to be cut off.
            None => {
                let file = self
                    .file
                    .take()
                    .ok_or_else(|| io::Error::other("direct writer used after a failure"))?;
                set_direct(&file, false)?;
                (file, false)
            }
            Some(io) => io.join()?,
        };
        let len = self.queued + self.current.len as u64;
        if self.current.len > 0 {
            write_block(&file, &mut self.current, self.queued, &mut direct)?;
        }
        // A direct last write is padded past the end, and space was allocated beyond it.
        if direct || self.allocated > len {
            file.set_len(len)?;
        }
        Ok(file)
    }
}

impl io::Write for DirectWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    /// Nothing to do: the bytes reach the file in `finish`.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where a working-tree file of known size is written in full: large files
/// go straight to the disk (like packs, and for the same reason: a checkout
/// of a 1 GiB file through the page cache spends most of its kernel time
/// filling fresh pages), small ones through the page cache, where a direct
/// write per file would wait for the disk each time.
pub enum FileWriter {
    /// Past the page cache (`O_DIRECT`): files of 2 MiB and more.
    Direct(DirectWriter),
    /// Through the page cache: smaller files, and where direct writes are refused.
    Buffered(io::BufWriter<File>),
}

impl FileWriter {
    /// Picks the way for a file about to receive `size` bytes.
    pub fn new(file: File, size: u64) -> FileWriter {
        let buffered = |file| FileWriter::Buffered(io::BufWriter::with_capacity(1 << 20, file));
        if size < DIRECT_FILES_FROM {
            return buffered(file);
        }
        DirectWriter::new(file).map_or_else(buffered, FileWriter::Direct)
    }

    /// Writes what is buffered; gives the file back (not synced).
    pub fn finish(self) -> io::Result<File> {
        match self {
            FileWriter::Direct(w) => w.finish(),
            FileWriter::Buffered(w) => w.into_inner().map_err(|e| e.into_error()),
        }
    }
}

impl io::Write for FileWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            FileWriter::Direct(w) => w.write(buf),
            FileWriter::Buffered(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            FileWriter::Direct(w) => io::Write::flush(w),
            FileWriter::Buffered(w) => w.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn write_in_pieces(pieces: &[Vec<u8>], temporary: bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::create(&path).unwrap();
        let mut expected = Vec::new();
        // ext4, xfs, btrfs and tmpfs (since Linux 6.6) all do direct I/O.
        let made = match temporary {
            true => DirectWriter::temporary(file),
            false => DirectWriter::new(file),
        };
        let Ok(mut w) = made else {
            panic!("no direct I/O in {}", dir.path().display())
        };
        for p in pieces {
            w.write_all(p).unwrap();
            expected.extend_from_slice(p);
        }
        w.finish().unwrap().sync_all().unwrap();
        // The space allocated ahead of the writes is given back.
        let blocks = std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(&path).unwrap());
        assert!(
            blocks * 512 < expected.len() as u64 + ALLOCATE_AHEAD / 2,
            "{} bytes hold {} blocks",
            expected.len(),
            blocks
        );
        let mut back = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), expected.len());
        assert!(
            back == expected,
            "file content differs from what was written"
        );
    }

    #[test]
    fn exact_bytes_at_every_boundary() {
        for len in [
            0,
            1,
            ALIGN - 1,
            ALIGN,
            ALIGN + 1,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            3 * BLOCK + 17,
            BUFFERS * BLOCK * 2 + 5,
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            write_in_pieces(std::slice::from_ref(&data), true);
            write_in_pieces(&[data], false);
        }
    }

    /// A pack of one small object touches one block of its buffer, not
    /// the whole 1 MiB (zeroed up front, that was 256 page faults a pack).
    #[test]
    fn a_small_write_initialises_only_the_block_it_pads_to() {
        let mut buf = AlignedBuf::new();
        buf.fill(&[7; 1000]);
        assert_eq!(buf.storage.len(), buf.start + 1000);
        let padded = buf.padded();
        assert_eq!(padded.len(), ALIGN);
        assert!(padded[..1000].iter().all(|b| *b == 7));
        assert!(padded[1000..].iter().all(|b| *b == 0));
        assert_eq!(buf.storage.len(), buf.start + ALIGN);
        assert_eq!((buf.storage.as_ptr() as usize + buf.start) % ALIGN, 0);
    }

    /// A working-tree file never looks longer than what was written into
    /// it (a temporary pack does: its space is allocated ahead).
    #[test]
    fn only_a_temporary_file_is_allocated_ahead() {
        let dir = tempfile::tempdir().unwrap();
        for temporary in [false, true] {
            let path = dir.path().join(format!("f-{temporary}"));
            let file = File::create(&path).unwrap();
            let mut w = match temporary {
                true => DirectWriter::temporary(file),
                false => DirectWriter::new(file),
            }
            .unwrap_or_else(|_| panic!("no direct I/O in {}", dir.path().display()));
            let written = 5 * BLOCK;
            w.write_all(&vec![3; written]).unwrap();
            let seen = std::fs::metadata(&path).unwrap().len();
            match temporary {
                false => assert!(seen <= written as u64, "{seen} bytes seen of {written}"),
                true => assert!(seen > written as u64, "{seen} bytes seen of {written}"),
            }
            w.finish().unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().len(), written as u64);
        }
    }

    #[test]
    fn many_small_appends() {
        let pieces: Vec<Vec<u8>> = (0..20_000)
            .map(|i| vec![(i % 256) as u8; 1 + i % 700])
            .collect();
        write_in_pieces(&pieces, true);
    }
}
