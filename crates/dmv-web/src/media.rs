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
    Other,
}

/// The media kind of a file name (by its extension, as browsers and servers do).
pub fn media_of(name: &str) -> Media {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "jpg" | "jpeg" | "png" | "webp" | "gif" | "tif" | "tiff" => Media::Image,
        // Camera raw formats whose embedded JPEG makes the thumbnail.
        "dng" | "cr2" | "nef" | "nrw" | "arw" | "srf" | "sr2" | "pef" | "srw" | "rw2" | "rwl" | "raf" | "3fr" | "erf" | "kdc" | "dcr" | "mos" | "iiq" => Media::Image,
        "mp4" | "m4v" | "webm" | "mov" | "ogv" | "mkv" => Media::Video,
        "mp3" | "m4a" | "aac" | "wav" | "flac" | "ogg" | "oga" | "opus" => Media::Audio,
        "txt" | "md" | "json" | "toml" | "yaml" | "yml" | "csv" | "xml" | "html" | "css" | "js" | "rs" | "py" | "c" | "h" | "sh" | "ini" | "cfg" | "log" => Media::Text,
        _ if !name.contains('.') || name.starts_with('.') && !name[1..].contains('.') => Media::Text,
        _ => Media::Other,
    }
}

/// The Content-Type to send a file with.
pub fn content_type_of(name: &str) -> String {
    match media_of(name) {
        Media::Text => "text/plain; charset=utf-8".to_string(),
        _ => mime_guess::from_path(name).first_or_octet_stream().essence_str().to_string(),
    }
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
        assert_eq!(content_type_of("a.webm"), "video/webm");
        assert_eq!(content_type_of("a.jpg"), "image/jpeg");
        assert_eq!(content_type_of("notes.txt"), "text/plain; charset=utf-8");
    }
}
