//! What a page request gets back, for the HTTP server to send.

use dmv_repo::store::ObjectId;

/// Who is looking, as the server's tokens say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Viewer {
    /// The token's user, if the config names one.
    pub user: Option<String>,
    /// May push, lock and upload files from the browser.
    pub may_write: bool,
    /// May break locks.
    pub admin: bool,
    /// The login's secret, which every form of it carries back (None: the
    /// viewer sent its token itself and no form of ours is needed).
    pub form_secret: Option<String>,
    /// The server's users: a comment's `@name` of one of them links to the
    /// comments that mention them.
    pub people: std::sync::Arc<std::collections::BTreeSet<String>>,
}

/// An answer to a page request.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// A page, or an error page.
    Html {
        /// The HTTP status: 200, or the error's (403, 404, 409).
        status: u16,
        /// The whole HTML document.
        body: String,
    },
    /// A JPEG made from an image (cacheable: its id names its content).
    Jpeg(Vec<u8>),
    /// File content: `len` bytes from `start` of content `id` (`total` long).
    /// `partial`: a 206 answer to a Range request.
    /// The server streams it with [`write_content`](crate::write_content).
    Content {
        /// The file's content.
        id: ObjectId,
        /// Its Content-Type, from the file's name in the URL.
        content_type: crate::media::ContentType,
        /// Offset of the first byte to send.
        start: u64,
        /// Bytes to send: the Content-Length.
        len: u64,
        /// The content's whole length, for Content-Range.
        total: u64,
        /// Send 206 with Content-Range; false: 200, all of it.
        partial: bool,
        /// Sent as an attachment under this name (asked for, or a type a
        /// browser must not show in the UI's origin).
        download: Option<String>,
    },
    /// A Range that starts past the end (416).
    RangeNotSatisfiable {
        /// The content's length, for `Content-Range: bytes */total`.
        total: u64,
    },
    /// See other (303), after a form was handled.
    Redirect(String),
    /// A folder of a commit as a zip stream, made as it is sent; the server
    /// streams it with `History::archive`.
    Zip {
        /// The commit.
        commit: ObjectId,
        /// The paths to put in it (none: the whole tree).
        paths: Vec<Vec<u8>>,
        /// The file name it is downloaded as; its stem is the folder inside.
        name: String,
    },
}
