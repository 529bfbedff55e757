//! The words of a refusal over the repository's format requirements
//! (`.dmv/requires`). What is refused, and that nothing is touched, is
//! tested through the library in dmv-repo's tests/requirements.rs.

use crate::common;

use common::remote::one_line_error;
use common::*;

#[test]
fn a_repository_this_dmv_cannot_read_is_refused_in_one_line() {
    let repo = new_repo();
    let d = repo.path();
    let mut requires = std::fs::read_to_string(d.join(".dmv/requires")).unwrap();
    requires.push_str("packs-v9\n");
    std::fs::write(d.join(".dmv/requires"), &requires).unwrap();
    let line = one_line_error(&dmv_out(d, &["status"]));
    assert!(
        line.contains("needs a newer dmv")
            && line.contains("packs-v9")
            && !line.contains("packs-v2"),
        "{line}"
    );
    // A clone from it is refused by the serving side, in one line.
    let t = tempfile::tempdir().unwrap();
    let line = one_line_error(&dmv_out(t.path(), &["clone", d.to_str().unwrap(), "copy"]));
    assert!(line.contains("packs-v9"), "{line}");
    // A format this dmv does not know at all.
    std::fs::write(d.join(".dmv/requires"), requires.replace("packs-v9\n", "")).unwrap();
    edit_config(d, |cfg| cfg["format"] = 3.into());
    let line = one_line_error(&dmv_out(d, &["status"]));
    assert!(line.contains("format 3"), "{line}");
}
