//! The files every page shares, served under `/-/` (pages allow no inline
//! script): the behaviour script, the service worker (served as `/sw.js`
//! so it may look after every page), and what makes the UI an installable
//! app on a phone: its manifest, with a share target for "Share → DMV",
//! and its icon.

/// `/-/app.js`: see its first lines.
pub const APP_SCRIPT: &str = include_str!("assets/app.js");

/// `/sw.js`: see its first lines.
pub const SERVICE_WORKER: &str = include_str!("assets/sw.js");

/// `/-/manifest.webmanifest`. The share target posts the shared photos to
/// `/-/share`, where the service worker keeps them for the upload page.
pub const MANIFEST: &str = r##"{"name":"DMV","short_name":"DMV","description":"Photos, films and files with their history","start_url":"/","scope":"/","display":"standalone","background_color":"#0d1117","theme_color":"#24292f","icons":[{"src":"/-/icon.svg","sizes":"any","type":"image/svg+xml"},{"src":"/-/icon-192.png","sizes":"192x192","type":"image/png"},{"src":"/-/icon-512.png","sizes":"512x512","type":"image/png","purpose":"any maskable"}],"share_target":{"action":"/-/share","method":"POST","enctype":"multipart/form-data","params":{"title":"title","files":[{"name":"photos","accept":["image/*","video/*","audio/*"]}]}}}"##;

/// `/-/icon.svg`: a frame of film over a dark square.
pub const ICON_SVG: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="12" fill="#24292f"/><rect x="14" y="18" width="36" height="28" rx="3" fill="none" stroke="#fff" stroke-width="4"/><path d="M18 42l9-10 7 7 5-5 7 8" fill="none" stroke="#4493f8" stroke-width="4" stroke-linejoin="round"/></svg>"##;

/// The icon as a PNG `edge` pixels a side (192 and 512 are served), drawn
/// here: the same frame as [`ICON_SVG`], in squares, without a rasterizer.
pub fn icon_png(edge: u32) -> Vec<u8> {
    let edge = edge.clamp(16, 1024);
    let unit = edge as f32 / 64.0;
    let img = image::RgbImage::from_fn(edge, edge, |x, y| {
        let (u, v) = (x as f32 / unit, y as f32 / unit);
        let frame = (14.0..50.0).contains(&u)
            && (18.0..46.0).contains(&v)
            && !((18.0..46.0).contains(&u) && (22.0..42.0).contains(&v));
        // The hill: a line from (18,42) up to (27,32) and down to (34,39).
        let hill = (18.0..46.0).contains(&u)
            && (22.0..42.0).contains(&v)
            && ((u < 27.0 && (v - (42.0 - (u - 18.0) * 10.0 / 9.0)).abs() < 2.5)
                || (u >= 27.0 && (v - (32.0 + (u - 27.0))).abs() < 2.5));
        if frame {
            image::Rgb([255, 255, 255])
        } else if hill {
            image::Rgb([0x44, 0x93, 0xf8])
        } else {
            image::Rgb([0x24, 0x29, 0x2f])
        }
    });
    let mut png = Vec::new();
    // Encoding a small image into memory does not fail.
    let _ = img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png);
    png
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_manifest_is_json_with_a_share_target_and_png_icons() {
        let m: serde_json::Value = serde_json::from_str(super::MANIFEST).unwrap();
        assert_eq!(m["share_target"]["action"], "/-/share");
        assert_eq!(m["share_target"]["params"]["files"][0]["name"], "photos");
        for edge in [192, 512] {
            let png = super::icon_png(edge);
            let decoded = image::load_from_memory(&png).unwrap();
            assert_eq!((decoded.width(), decoded.height()), (edge, edge));
        }
    }
}
