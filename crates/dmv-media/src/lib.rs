#![warn(missing_docs)]
//! Media files as a person knows them, read from bytes a committed file
//! holds (all of them hostile: every length and offset is checked, every
//! walk and decode bounded). No DMV crate: the repository's diffs and the
//! web UI's thumbnails both use it.
//!
//! Read bottom up: `fragmented_mp4` (a fragmented MP4's duration from its
//! fragments), `facts` (a picture's size and EXIF, a sound's or a film's
//! duration), `raw_preview` (the JPEG a camera embeds in a raw file) and
//! `decode` (images decoded small for thumbnails and previews, within a
//! memory budget).

mod decode;
mod facts;
mod fragmented_mp4;
mod raw_preview;

pub use decode::{decode, decode_jpeg_scaled, scaled_jpeg_of, MAX_DECODE_ALLOC};
pub use facts::{media_facts, picture_shape, PictureShape, MOST_MP4_BOXES};
pub use raw_preview::{largest_embedded_jpeg, EmbeddedJpeg};
