//! Thumbnails and previews of images, made on the server and kept by
//! content id (`.dmv/web-cache/`), so a version is decoded once whatever
//! commit, branch or page shows it. Browsers get small JPEGs: a large
//! photo is never decoded whole in the browser.
//!
//! Images are decoded by dmv-media within its budget of one decode
//! ([`MAX_DECODE_ALLOC`]), a few at a time (the budget of all decodes is
//! here). A camera raw file gives the JPEG its camera embedded.

use std::io::Read;
use std::path::PathBuf;
use std::sync::LazyLock;

use dmv_media::{
    decode, decode_jpeg_scaled, largest_embedded_jpeg, scaled_jpeg_of, MAX_DECODE_ALLOC,
};
use dmv_repo::store::ObjectId;
use dmv_repo::Repository;
use image::DynamicImage;

use crate::flights::{Budget, Flights};

/// A thumbnail (lists, commit pages) fits in a square this many pixels a side.
pub const THUMBNAIL_EDGE: u32 = 256;
/// A preview (file and compare pages) fits in a square this many pixels a side.
pub const PREVIEW_EDGE: u32 = 1600;

/// A source image larger than this is not read for a thumbnail.
const MAX_SOURCE_BYTES: u64 = 128 << 20;
/// A camera's embedded JPEG longer than this is passed over (the largest
/// full-size previews of 100-megapixel cameras are about 30 MiB).
const MAX_EMBEDDED_PREVIEW_BYTES: u64 = 32 << 20;
/// What the decodes running at once may hold together, sources included:
/// two photos at a time, one source near [`MAX_SOURCE_BYTES`] alone. This
/// bounds the server's memory whatever many pages ask (the budget
/// for the whole server is 512 MiB).
const DECODE_MEMORY: u64 = 2 * (MAX_EMBEDDED_PREVIEW_BYTES + MAX_DECODE_ALLOC);

/// The decodes running, by the memory each may take.
static DECODING: Budget = Budget::new(DECODE_MEMORY);
/// Thumbnails being made, by repository, content id and edge: many pages
/// asking for one at once wait for one decode (the files in `web-cache`
/// keep them; nothing is kept here).
static MAKING: LazyLock<Flights<(PathBuf, ObjectId, u32), Made>> =
    LazyLock::new(|| Flights::new(0));

/// A thumbnail's bytes, or why there is none.
type Made = Result<Vec<u8>, String>;

fn cache_path(repo: &Repository, id: &ObjectId, edge: u32) -> PathBuf {
    repo.dmv
        .join("web-cache")
        .join(format!("{}-{edge}.jpg", id.to_hex()))
}

/// A JPEG of the image `id` fitting in `edge`×`edge` pixels, from the cache
/// or made now. Errors say why in one line (not an image, data not here).
pub fn scaled_jpeg(repo: &Repository, id: &ObjectId, edge: u32) -> Result<Vec<u8>, String> {
    let cached = cache_path(repo, id, edge);
    if let Ok(bytes) = std::fs::read(&cached) {
        return Ok(bytes);
    }
    MAKING.get(&(repo.dmv.clone(), *id, edge), || {
        make_scaled_jpeg(repo, id, edge, &cached)
    })
}

fn make_scaled_jpeg(
    repo: &Repository,
    id: &ObjectId,
    edge: u32,
    cached: &std::path::Path,
) -> Result<Vec<u8>, String> {
    let image = match camera_preview(repo, id, edge) {
        Some(image) => image,
        None => {
            // The size a file node records, checked before anything is read or held.
            let len = repo.store.content_len(id).map_err(|e| e.to_string())?;
            if len > MAX_SOURCE_BYTES {
                return Err(format!(
                    "the image is larger than {} MiB",
                    MAX_SOURCE_BYTES >> 20
                ));
            }
            let _share = DECODING.take(len + MAX_DECODE_ALLOC);
            let mut source = Vec::with_capacity(len as usize);
            let reader = repo.store.content_reader(id).map_err(|e| e.to_string())?;
            reader
                .take(len)
                .read_to_end(&mut source)
                .map_err(|e| e.to_string())?;
            decode(&source, edge)?
        }
    };
    let out = scaled_jpeg_of(&image, edge)?;
    // A cache: if it cannot be written (a read-only repository), the next request makes it again.
    if std::fs::create_dir_all(cached.parent().unwrap_or(&repo.dmv)).is_ok() {
        let tmp = cached.with_extension(format!(
            "tmp-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        if std::fs::write(&tmp, &out)
            .and_then(|_| std::fs::rename(&tmp, cached))
            .is_err()
        {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    Ok(out)
}

/// The camera's own JPEG inside a raw file, decoded (None: not a raw, or
/// none of its JPEGs decodes: the file is then read as any image).
fn camera_preview(repo: &Repository, id: &ObjectId, edge: u32) -> Option<DynamicImage> {
    let preview = largest_embedded_jpeg(
        &mut repo.store.seekable_content(id).ok()?,
        MAX_EMBEDDED_PREVIEW_BYTES,
    )?;
    let _share = DECODING.take(preview.len + MAX_DECODE_ALLOC);
    let mut jpeg = Vec::with_capacity(preview.len as usize);
    repo.store
        .content_reader_at(id, preview.offset)
        .ok()?
        .take(preview.len)
        .read_to_end(&mut jpeg)
        .ok()?;
    decode_jpeg_scaled(&jpeg, edge).ok().flatten()
}
