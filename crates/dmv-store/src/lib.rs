//! DMV's object store: content-defined chunking, BLAKE3 object ids, append-only
//! pack files with memory-mapped indexes, and the encodings of every object kind.
//!
//! Nothing here knows about working trees, branches or remotes; the repo layer
//! builds on top of [`Store`] and [`WriteSession`].
//!
//! Files, bottom up (a file only uses files listed before it): the leaves
//! `id` (object ids and kinds), `progress`, `clock`, `temp`, `trace`, `filter` (the Bloom
//! filters in front of indexes) and `direct` (writing past the page cache);
//! `error`, `object` (the encodings of the object kinds), `chunker`, `nodes`
//! (long lists split into nodes), `hashonly`, `lock` (the gc lock); packs:
//! `pack`, `index`, `marks` (flags per object, by index position); the
//! store: `store` (opening it, its indexes, finding and reading objects),
//! `content` (a file's content read back), `multi_pack` (keeping the
//! multi-pack index), `session` (writing objects) and `ingest` (storing
//! working-tree files); and on top `verify`, `gc` and `repair`.

#![warn(missing_docs)]

mod chunker;
mod clock;
mod content;
mod direct;
mod error;
mod filter;
mod gc;
mod hashonly;
mod id;
mod index;
mod ingest;
mod lock;
mod marks;
mod multi_pack;
mod nodes;
pub mod object;
mod pack;
mod progress;
mod repair;
mod session;
mod store;
mod temp;
pub mod trace;
mod verify;

pub use chunker::{ChunkBatch, ChunkParams, Chunker};
pub use clock::timestamp_granularity;
pub use content::{ContentReader, SeekableContent};
pub use direct::FileWriter;
pub use error::{StoreError, StoreResult};
pub use gc::{GcOptions, GcReport, RepackReport, AUTO_REPACK_SMALL_PACKS, DEFAULT_KEEP_RECENT};
pub use hashonly::hash_file;
pub use id::{ObjectId, ObjectKind};
pub use index::{pack_of_index, verify_pack_index, HashingWriter, Located};
pub use ingest::{IngestSource, Ingested};
pub use lock::GcLock;
pub use nodes::{FileList, ListBuilder, ListShape, NodeSink, TreeList};
pub use pack::{
    check_record_header, index_file_name, pack_file_name, Entry as PackEntry,
    HEADER_LEN as PACK_HEADER_LEN, RECORD_HEADER_LEN,
};
pub use progress::{Phase, Progress, Silent, Tally};
pub use repair::Salvaged;
pub use session::{SealedPack, WriteSession};
pub use store::{Stats, Store, StoredObject, MULTI_PACK_INDEX};
pub use verify::{Damage, VerifyReport};

/// A named point between durable steps where the tests make the process
/// abort or pause (see [`dmv_os::fault`]; empty in release builds).
pub use dmv_os::fault::point as failpoint;
