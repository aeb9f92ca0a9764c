//! Where keys are in a TOML document: line and column for error messages, and the dotted key
//! under a byte offset.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

/// 1-based (line, column) of byte `offset` in `text` (column in characters).
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The span of the value of the dotted key `path` (e.g. `["wind", "speed"]`), or of the
/// deepest table on the way that exists.
pub fn span_of(text: &str, path: &[&str]) -> Option<Range<usize>> {
    let document = DeTable::parse(text).ok()?;
    let mut table = document.get_ref();
    let mut span = None;
    for key in path {
        let Some((k, value)) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *key) else {
            break;
        };
        span = Some(if matches!(value.get_ref(), DeValue::Table(_)) {
            k.span()
        } else {
            value.span()
        });
        match value.get_ref() {
            DeValue::Table(inner) => table = inner,
            _ => break,
        }
    }
    span
}

/// The dotted key whose key or value contains byte `offset`, the innermost one, e.g.
/// `snow.flake_diameter`; a table's name when the offset is on its header only; `None`
/// outside every key.
pub fn key_at(text: &str, offset: usize) -> Option<String> {
    let (document, _) = DeTable::parse_recoverable(text);
    find(document.get_ref(), offset).map(|path| path.join("."))
}

fn find(table: &DeTable<'_>, offset: usize) -> Option<Vec<String>> {
    let inside = |s: Range<usize>| s.start <= offset && offset < s.end.max(s.start + 1);
    for (key, value) in table.iter() {
        if let DeValue::Table(inner) = value.get_ref()
            && let Some(mut path) = find(inner, offset)
        {
            path.insert(0, key.get_ref().to_string());
            return Some(path);
        }
        if inside(key.span()) || inside(value.span()) {
            return Some(vec![key.get_ref().to_string()]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str =
        "name = \"x\"\n[wind]\nspeed = 3.0\nprofile = \"log\"\n\n[snow]\nparticles = 5\n";

    #[test]
    fn spans_lines_and_keys_agree() {
        let span = span_of(DOC, &["wind", "speed"]).unwrap();
        assert_eq!(&DOC[span.clone()], "3.0");
        assert_eq!(line_column(DOC, span.start), (3, 9));
        assert_eq!(key_at(DOC, span.start).as_deref(), Some("wind.speed"));
        let particles = DOC.find("particles").unwrap();
        assert_eq!(key_at(DOC, particles).as_deref(), Some("snow.particles"));
        assert_eq!(key_at(DOC, 0).as_deref(), Some("name"));
        // A missing key points at its table.
        let table = span_of(DOC, &["wind", "roughness"]).unwrap();
        assert_eq!(&DOC[table], "wind");
        assert_eq!(span_of(DOC, &["camera"]), None);
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
    }
}
