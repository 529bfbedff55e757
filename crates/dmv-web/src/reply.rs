//! What a page request gets back, for the HTTP server to send.

use dmv_repo::store::ObjectId;

/// Who is looking, as the server's tokens say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Viewer {
    /// The token's user, if the config names one.
    pub user: Option<String>,
    /// May break locks.
    pub admin: bool,
}

/// An answer to a page request.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    Html {
        status: u16,
        body: String,
    },
    /// A JPEG made from an image (cacheable: its id names its content).
    Jpeg(Vec<u8>),
    /// File content: `len` bytes from `start` of content `id` (`total` long).
    /// `partial`: a 206 answer to a Range request.
    Content {
        id: ObjectId,
        content_type: String,
        start: u64,
        len: u64,
        total: u64,
        partial: bool,
        download: Option<String>,
    },
    /// A Range that starts past the end (416).
    RangeNotSatisfiable {
        total: u64,
    },
    /// See other (303), after a form was handled.
    Redirect(String),
}
