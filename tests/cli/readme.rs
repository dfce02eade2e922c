//! The README documents every key the keymap binds, so the two cannot drift apart.

use gpudeck::app::keymap::bindings;

#[test]
fn every_key_is_in_the_readme() {
    let readme = include_str!("../../README.md");
    for b in bindings() {
        assert!(
            readme.contains(&format!("`{}`", b.label)),
            "README.md does not document the key `{}` ({})",
            b.label,
            b.description
        );
    }
}
