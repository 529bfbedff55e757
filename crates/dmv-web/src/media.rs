//! What kind of file a name is, for how a page shows it.

/// How a page shows a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Media {
    /// The server makes thumbnails and previews of it.
    Image,
    /// The browser plays it in `<video>`, streamed by range.
    Video,
    /// The browser plays it in `<audio>`, streamed by range.
    Audio,
    /// Shown as text when small enough and UTF-8.
    Text,
    /// Offered for download only: no preview, player or text.
    Other,
}

/// The media kind of a file name (by its extension, as browsers and servers do).
pub fn media_of(name: &str) -> Media {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "jpg" | "jpeg" | "png" | "webp" | "gif" | "tif" | "tiff" => Media::Image,
        // Camera raw formats whose embedded JPEG makes the thumbnail.
        "dng" | "cr2" | "nef" | "nrw" | "arw" | "srf" | "sr2" | "pef" | "srw" | "rw2" | "rwl"
        | "raf" | "3fr" | "erf" | "kdc" | "dcr" | "mos" | "iiq" => Media::Image,
        "mp4" | "m4v" | "webm" | "mov" | "ogv" | "mkv" => Media::Video,
        "mp3" | "m4a" | "aac" | "wav" | "flac" | "ogg" | "oga" | "opus" => Media::Audio,
        "txt" | "md" | "json" | "toml" | "yaml" | "yml" | "csv" | "xml" | "html" | "css" | "js"
        | "rs" | "py" | "c" | "h" | "sh" | "ini" | "cfg" | "log" => Media::Text,
        // Sidecars and lists that live beside media: XMP metadata, edit decision lists, subtitles, LUTs, tracks.
        "xmp" | "edl" | "ale" | "srt" | "vtt" | "cube" | "gpx" | "pto" => Media::Text,
        _ if !name.contains('.') || name.starts_with('.') && !name[1..].contains('.') => {
            Media::Text
        }
        _ => Media::Other,
    }
}

/// How file content is sent: its Content-Type, and whether a browser may
/// show it in the page (`inline`) or must save it (an attachment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentType {
    /// The Content-Type header's value (text carries `; charset=utf-8`).
    pub mime: String,
    /// May be shown in the page; false: sent with `Content-Disposition: attachment`.
    pub inline: bool,
}

/// The Content-Type to send a file with. The name comes from the URL, which
/// whoever sends the link chooses, so only passive types are ever sent:
/// pictures and sound a browser cannot run, and text as `text/plain`.
/// Everything else (HTML, SVG, XML, PDF, scripts) goes as an attachment of
/// type `application/octet-stream`, never as something the UI's origin runs.
pub fn content_type_of(name: &str) -> ContentType {
    let guessed = mime_guess::from_path(name)
        .first_or_octet_stream()
        .essence_str()
        .to_string();
    match media_of(name) {
        Media::Text => ContentType {
            mime: "text/plain; charset=utf-8".into(),
            inline: true,
        },
        Media::Image | Media::Video | Media::Audio if PASSIVE.contains(&guessed.as_str()) => {
            ContentType {
                mime: guessed,
                inline: true,
            }
        }
        _ => ContentType {
            mime: "application/octet-stream".into(),
            inline: false,
        },
    }
}

/// Types a browser only decodes, never runs (SVG is an image that runs script, so it is not here).
const PASSIVE: &[&str] = &[
    "image/jpeg",
    "image/png",
    "image/gif",
    "image/webp",
    "video/mp4",
    "video/webm",
    "video/ogg",
    "video/quicktime",
    "video/x-matroska",
    "video/x-m4v",
    "audio/mpeg",
    "audio/mp4",
    "audio/m4a",
    "audio/x-m4a",
    "audio/x-flac",
    "audio/vnd.wave",
    "audio/aac",
    "audio/wav",
    "audio/x-wav",
    "audio/flac",
    "audio/ogg",
    "audio/opus",
];

/// Whether a file's data is here: in a full replica its first object says
/// so (objects land with all they reach); a partial one checks its chunks.
pub fn data_here(repo: &dmv_repo::Repository, id: &dmv_repo::store::ObjectId) -> bool {
    match repo.is_partial() {
        false => repo.store.contains(id).unwrap_or(false),
        true => repo.store.check_content_present(id).is_ok(),
    }
}

/// Makes a file version's data present, from elsewhere, when a page is
/// about to read it; says whether it did. A server that shows a repository
/// kept in a bucket reads from a view holding the metadata only, and
/// fetches a file's data the first time a page reads it.
pub type Bring<'a> = &'a (dyn Fn(&dmv_repo::store::ObjectId) -> bool + Sync);

/// Whether a file's data is here, once `bring` (if given) was asked for it.
pub fn here_or_brought(
    repo: &dmv_repo::Repository,
    id: &dmv_repo::store::ObjectId,
    bring: Option<Bring<'_>>,
) -> bool {
    data_here(repo, id) || (bring.is_some_and(|b| b(id)) && data_here(repo, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_their_media() {
        assert_eq!(media_of("shoot/IMG_0001.JPG"), Media::Image);
        assert_eq!(media_of("cut.webm"), Media::Video);
        assert_eq!(media_of("take.wav"), Media::Audio);
        assert_eq!(media_of("README"), Media::Text);
        assert_eq!(media_of(".dmvattributes"), Media::Text);
        assert_eq!(media_of("scene.psd"), Media::Other);
        assert_eq!(media_of("DSC_0042.NEF"), Media::Image);
        let inline = |mime: &str| ContentType {
            mime: mime.into(),
            inline: true,
        };
        assert_eq!(content_type_of("a.webm"), inline("video/webm"));
        assert_eq!(content_type_of("a.jpg"), inline("image/jpeg"));
        assert_eq!(
            content_type_of("notes.txt"),
            inline("text/plain; charset=utf-8")
        );
    }

    #[test]
    fn the_pictures_films_and_sound_pages_show_are_sent_inline() {
        for ext in [
            "jpg", "jpeg", "png", "webp", "gif", "mp4", "m4v", "webm", "mov", "ogv", "mkv", "mp3",
            "m4a", "aac", "wav", "flac", "ogg", "oga", "opus",
        ] {
            assert!(
                content_type_of(&format!("a.{ext}")).inline,
                "{ext}: {:?}",
                content_type_of(&format!("a.{ext}"))
            );
        }
    }

    #[test]
    fn names_that_browsers_would_run_are_sent_as_plain_text_or_attachments() {
        let attachment = ContentType {
            mime: "application/octet-stream".into(),
            inline: false,
        };
        for name in [
            "report.htm",
            "page.shtml",
            "logo.svg",
            "a.xhtml",
            "doc.pdf",
            "x.svgz",
            "feed.rss",
            "scene.psd",
            "DSC_0042.NEF",
            "a.swf",
            "x.mht",
        ] {
            assert_eq!(content_type_of(name), attachment, "{name}");
        }
        for name in ["index.html", "data.xml", "app.js", "style.css", "README"] {
            assert_eq!(
                content_type_of(name).mime,
                "text/plain; charset=utf-8",
                "{name}"
            );
        }
    }
}
