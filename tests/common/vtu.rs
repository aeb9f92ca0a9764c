//! A reader of the `.vtu` files snowsim writes, of its own (the XML header's attributes, then
//! the raw appended block through the offsets): the tests read back what was written.

use std::collections::BTreeMap;

/// One `<DataArray>` of the header: the section it is in, its attributes.
#[derive(Debug)]
pub struct DataArray {
    pub section: String,
    pub attributes: BTreeMap<String, String>,
}

impl DataArray {
    pub fn get(&self, key: &str) -> &str {
        self.attributes
            .get(key)
            .unwrap_or_else(|| panic!("{self:?} has no {key}"))
    }
}

/// A `.vtu` parsed: the attributes of `Piece`, the data arrays, and the raw appended bytes
/// (from just after `_`).
pub struct Parsed {
    pub piece: BTreeMap<String, String>,
    pub arrays: Vec<DataArray>,
    pub raw: Vec<u8>,
    pub header: String,
}

/// The attributes of the tag starting at `tag` (`key="value"` pairs up to `>`), unescaped.
pub fn attributes(tag: &str) -> BTreeMap<String, String> {
    let end = tag.find('>').expect("tag ends");
    let mut rest = &tag[..end];
    rest = rest.split_once(char::is_whitespace).map_or("", |(_, r)| r);
    let mut map = BTreeMap::new();
    while let Some((key, after)) = rest.split_once("=\"") {
        let (value, after) = after.split_once('"').expect("closing quote");
        let value = value
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&");
        let previous = map.insert(key.trim().to_string(), value);
        assert!(previous.is_none(), "attribute {key} twice");
        rest = after;
    }
    map
}

/// Parses a `.vtu` as `snowsim::meshio::vtu` writes it, checking its frame.
pub fn parse(bytes: &[u8]) -> Parsed {
    let marker = b"<AppendedData encoding=\"raw\">";
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("AppendedData");
    let underscore = at
        + marker.len()
        + bytes[at + marker.len()..]
            .iter()
            .position(|&b| b == b'_')
            .expect("_ marker");
    assert!(
        bytes[at + marker.len()..underscore]
            .iter()
            .all(u8::is_ascii_whitespace),
        "only white space between AppendedData and _"
    );
    let header = std::str::from_utf8(&bytes[..at]).expect("UTF-8 header");
    assert!(header.starts_with("<?xml version=\"1.0\"?>\n"));

    let file = attributes(&header[header.find("<VTKFile").expect("VTKFile")..]);
    assert_eq!(file["type"], "UnstructuredGrid");
    assert_eq!(file["byte_order"], "LittleEndian");
    assert_eq!(file["header_type"], "UInt64");
    let piece = attributes(&header[header.find("<Piece").expect("Piece")..]);

    let mut arrays = Vec::new();
    let mut section = String::new();
    for (i, _) in header.match_indices('<') {
        let tag = &header[i + 1..];
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '/')
            .collect();
        match name.as_str() {
            "PointData" | "CellData" | "Points" | "Cells" => section = name,
            "DataArray" => arrays.push(DataArray {
                section: section.clone(),
                attributes: attributes(tag),
            }),
            _ => {}
        }
    }
    let raw = bytes[underscore + 1..].to_vec();
    let trailer = b"\n  </AppendedData>\n</VTKFile>\n";
    assert!(raw.ends_with(trailer), "file ends with the closing tags");
    Parsed {
        piece,
        arrays,
        raw: raw[..raw.len() - trailer.len()].to_vec(),
        header: header.to_string(),
    }
}

impl Parsed {
    pub fn array(&self, section: &str, name: &str) -> &DataArray {
        self.arrays
            .iter()
            .find(|a| {
                a.section == section && a.attributes.get("Name").map(String::as_str) == Some(name)
            })
            .unwrap_or_else(|| panic!("no {section} array {name} in {:?}", self.arrays))
    }

    /// The bytes of `array`, checked against its length prefix.
    pub fn bytes(&self, array: &DataArray) -> &[u8] {
        assert_eq!(array.get("format"), "appended");
        let offset: usize = array.get("offset").parse().unwrap();
        let length = u64::from_le_bytes(self.raw[offset..offset + 8].try_into().unwrap()) as usize;
        &self.raw[offset + 8..offset + 8 + length]
    }

    /// The values of the array `name` in `section`, whose VTK type must be `kind`, each read
    /// from `N` little-endian bytes by `from`.
    fn values<const N: usize, T>(
        &self,
        section: &str,
        name: &str,
        kind: &str,
        from: fn([u8; N]) -> T,
    ) -> Vec<T> {
        let array = self.array(section, name);
        assert_eq!(array.get("type"), kind);
        self.bytes(array)
            .chunks_exact(N)
            .map(|c| from(c.try_into().unwrap()))
            .collect()
    }

    pub fn f32s(&self, section: &str, name: &str) -> Vec<f32> {
        self.values(section, name, "Float32", f32::from_le_bytes)
    }

    pub fn f64s(&self, section: &str, name: &str) -> Vec<f64> {
        self.values(section, name, "Float64", f64::from_le_bytes)
    }

    pub fn i32s(&self, section: &str, name: &str) -> Vec<i32> {
        self.values(section, name, "Int32", i32::from_le_bytes)
    }

    pub fn i64s(&self, section: &str, name: &str) -> Vec<i64> {
        self.values(section, name, "Int64", i64::from_le_bytes)
    }

    pub fn components(&self, section: &str, name: &str) -> usize {
        self.array(section, name)
            .attributes
            .get("NumberOfComponents")
            .map_or(1, |n| n.parse().unwrap())
    }
}
