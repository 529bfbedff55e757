//! A camera raw's preview tags are the file's word: a TIFF whose JPEG tags
//! (513/514) claimed 1.5 GiB at offset 4096, in a sparse file that dedups
//! to a few kilobytes, made `/thumb` read and hold all of it (the server
//! went from 25 MB to 1.6 GB). What a thumbnail allocates is counted here
//! by the test's own allocator, so the bound is exact, not a timing.
//!
//! One test per file: the allocator counts every thread of the binary.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Cursor, Read};
use std::sync::atomic::{AtomicUsize, Ordering};

use dmv_web::{largest_embedded_jpeg, scaled_jpeg, PREVIEW_EDGE, THUMBNAIL_EDGE};
use image::{ImageEncoder, RgbImage};

struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(held, Ordering::SeqCst);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::SeqCst);
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let picture = RgbImage::from_fn(width, height, |x, _| {
        image::Rgb([(x * 255 / width) as u8, 60, 90])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85)
        .write_image(&picture, width, height, image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

/// A little-endian TIFF whose one directory says the JPEG at 4096 is
/// `claimed` bytes long; a real small JPEG is there, then zeros up to the
/// claimed end (read, never stored: they dedup to one chunk).
fn lying_raw(claimed: u32) -> impl Read {
    let mut head = b"II*\0\x08\0\0\0".to_vec();
    head.extend_from_slice(&2u16.to_le_bytes());
    for (tag, value) in [(513u16, 4096u32), (514, claimed)] {
        head.extend_from_slice(&tag.to_le_bytes());
        head.extend_from_slice(&4u16.to_le_bytes());
        head.extend_from_slice(&1u32.to_le_bytes());
        head.extend_from_slice(&value.to_le_bytes());
    }
    head.extend_from_slice(&0u32.to_le_bytes());
    head.resize(4096, 0);
    head.extend(jpeg(640, 427));
    let len = 4096 + claimed as u64;
    let rest = len - head.len() as u64;
    Cursor::new(head).chain(std::io::repeat(0).take(rest))
}

#[test]
fn a_preview_claiming_gigabytes_is_passed_over_and_a_thumbnail_holds_little() {
    let dir = tempfile::tempdir().unwrap();
    let repo =
        dmv_repo::Repository::init(dir.path(), dmv_repo::store::ChunkParams::default()).unwrap();
    let mut session = repo.store.begin_write().unwrap();
    let (lying, _) = session.put_content(&mut lying_raw(1536 << 20)).unwrap();
    let (honest, _) = session.put_content(&mut lying_raw(4 << 20)).unwrap();
    session.finish().unwrap();

    // The parser passes over a candidate longer than its caller's budget.
    let mut whole = Vec::new();
    lying_raw(4 << 20).read_to_end(&mut whole).unwrap();
    assert_eq!(
        largest_embedded_jpeg(&mut Cursor::new(&whole), (4 << 20) - 1),
        None
    );
    assert_eq!(
        largest_embedded_jpeg(&mut Cursor::new(&whole), 4 << 20)
            .map(|p| (p.offset, p.len, p.width)),
        Some((4096, 4 << 20, 640))
    );
    drop(whole);

    let before = HELD.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    for edge in [THUMBNAIL_EDGE, PREVIEW_EDGE] {
        let refused = scaled_jpeg(&repo, &lying, edge).unwrap_err();
        assert!(refused.contains("larger than"), "{refused}");
    }
    let lying_peak = PEAK.load(Ordering::SeqCst) - before;
    assert!(
        lying_peak < 16 << 20,
        "a thumbnail of the lying raw held {} MiB",
        lying_peak >> 20
    );

    // An honest length within the budget still gives the camera's picture.
    let thumb =
        image::load_from_memory(&scaled_jpeg(&repo, &honest, THUMBNAIL_EDGE).unwrap()).unwrap();
    assert_eq!((thumb.width(), thumb.height()), (256, 171));
}
