//! The service that starts a watcher at login: a systemd user unit on
//! Linux, a launchd agent on macOS, each named after its repository.

use std::path::Path;

use crate::watch_log::LOG_FILE;

/// `dmv-watch-<folder>-<hash of the path>`: one service per repository.
pub fn service_name(root: &Path) -> String {
    let folder: String = root
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect()
        })
        .unwrap_or_default();
    let hash = blake3_hex(root.as_os_str().as_encoded_bytes());
    format!("dmv-watch-{folder}-{}", &hash[..8])
}

fn blake3_hex(bytes: &[u8]) -> String {
    dmv_repo::store::ObjectId::hash(dmv_repo::store::ObjectKind::Chunk, bytes).to_hex()
}

/// A systemd user unit: arguments quoted as systemd reads them.
pub fn systemd_unit(root: &Path, argv: &[String]) -> String {
    let quoted: Vec<String> = argv
        .iter()
        .map(|a| {
            format!(
                "\"{}\"",
                a.replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('%', "%%")
            )
        })
        .collect();
    format!(
        "[Unit]\nDescription=dmv watch of {root}\n\n[Service]\nWorkingDirectory=\"{root}\"\nExecStart={exec}\nRestart=on-failure\nRestartSec=10\n\n[Install]\nWantedBy=default.target\n",
        root = root.display(),
        exec = quoted.join(" ")
    )
}

/// A launchd agent: started at load, restarted when it exits, its output in the watch log.
pub fn launchd_plist(label: &str, root: &Path, argv: &[String]) -> String {
    let xml = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let args: String = argv
        .iter()
        .map(|a| format!("\t\t<string>{}</string>\n", xml(a)))
        .collect();
    // The log's path from the raw root: escaped once, as the root is.
    let log = xml(&root.join(".dmv").join(LOG_FILE).to_string_lossy());
    let root = xml(&root.to_string_lossy());
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n\t<key>Label</key>\n\t<string>{label}</string>\n\t<key>ProgramArguments</key>\n\t<array>\n{args}\t</array>\n\t<key>WorkingDirectory</key>\n\t<string>{root}</string>\n\t<key>RunAtLoad</key>\n\t<true/>\n\t<key>KeepAlive</key>\n\t<true/>\n\t<key>StandardOutPath</key>\n\t<string>{log}</string>\n\t<key>StandardErrorPath</key>\n\t<string>{log}</string>\n</dict>\n</plist>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_quotes_its_arguments_as_systemd_reads_them() {
        let unit = systemd_unit(
            Path::new("/home/ann/shoot"),
            &["/usr/bin/dmv".into(), "watch".into(), "100% \"raw\"".into()],
        );
        assert!(
            unit.contains("ExecStart=\"/usr/bin/dmv\" \"watch\" \"100%% \\\"raw\\\"\"\n"),
            "{unit}"
        );
        assert!(unit.contains("WorkingDirectory=\"/home/ann/shoot\"\n"));
    }

    #[test]
    fn a_plist_escapes_what_xml_would_read_and_logs_to_the_watch_log() {
        let plist = launchd_plist(
            "dmv-watch-a",
            Path::new("/Users/ann/a&b"),
            &["<dmv>".into()],
        );
        assert!(plist.contains("<string>&lt;dmv&gt;</string>"));
        assert!(plist.contains("<string>/Users/ann/a&amp;b/.dmv/watch.log</string>"));
    }

    #[test]
    fn each_repository_gets_a_service_of_its_own() {
        let a = service_name(Path::new("/home/ann/shoot 1"));
        let b = service_name(Path::new("/srv/shoot 1"));
        assert!(
            a.starts_with("dmv-watch-shoot1-") && a.len() == "dmv-watch-shoot1-".len() + 8,
            "{a}"
        );
        assert_ne!(a, b);
    }
}
