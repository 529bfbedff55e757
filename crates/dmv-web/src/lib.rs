//! The web UI of `dmv serve`: pages of a repository's branches, history,
//! commits (with before and after thumbnails), folders and files (pictures,
//! players, text), image comparisons, locks, and the form that uploads
//! files from a browser. Plain HTML rendered here
//! from the same library calls the command line uses; the HTTP server
//! (dmv-server) checks tokens and sends what these functions answer.

#![warn(missing_docs)]

mod assets;
mod audit_page;
mod comments;
mod flights;
mod home;
mod markdown;
mod media;
mod pages;
mod photos;
mod ranges;
mod reply;
mod review_pages;
mod routes;
mod search;
mod thumbs;
mod upload_page;
mod urls;
mod words;

pub use assets::{icon_png, APP_SCRIPT, ICON_SVG, MANIFEST, SERVICE_WORKER};
pub use audit_page::{audit_page, DeliveryRow};
pub use dmv_media::{largest_embedded_jpeg, EmbeddedJpeg};
pub use media::{content_type_of, data_here, media_of, Bring, ContentType, Media};
pub use pages::{
    index as index_page, login as login_page, logout as logout_page, share as share_page,
    COMPARE_SCRIPT, THEME_SCRIPT,
};
pub use ranges::{parse_range, ByteRange};
pub use reply::{Reply, Viewer};
pub use review_pages::{change_review, ReviewAction, ReviewForm};
pub use routes::{
    change_lock, respond, write_content, LockAction, LockKeeper, PageRequest, WEB_REPLICA,
};
pub use thumbs::{scaled_jpeg, PREVIEW_EDGE, THUMBNAIL_EDGE};
pub use upload_page::UPLOAD_SCRIPT;
