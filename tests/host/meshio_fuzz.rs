//! meshio under corruption: valid files (binary in every version, ASCII) of a few hundred
//! entities are damaged at random. Reading must return `Ok` or `Err`, never panic; an `Err`
//! must name the file and a byte or line; an `Ok` mesh must be consistent; and no read may
//! allocate much more than the file's size (a global allocator records the largest request),
//! which proves that lying counts are rejected before anything is allocated from them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use snowsim::meshio::{self, ElementKind, Format, Mesh, MeshError, MeshFile, Version, generate};

/// Passes every request to the system allocator, recording the largest one per thread.
struct PeakAlloc;

thread_local! {
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // Unavailable only while a thread is being torn down, when nothing is measured.
    let _ = PEAK.try_with(|peak| peak.set(peak.get().max(size)));
}

// SAFETY: every call is forwarded unchanged to `System`.
unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// A few hundred entities of every kind, with varied references.
fn base_mesh(dimension: u8) -> Mesh {
    let mut m = generate::tet_grid([3, 3, 3]);
    m.dimension = dimension;
    for (i, r) in m.vertex_refs.iter_mut().enumerate() {
        *r = (i % 5) as i32 - 2;
    }
    let nv = m.vertices.len();
    for kind in ElementKind::ALL {
        if kind == ElementKind::Tetrahedra || kind == ElementKind::Triangles {
            continue;
        }
        for e in 0..7 {
            let nodes: Vec<u32> = (0..kind.nodes())
                .map(|j| ((e * 11 + j * 7) % nv) as u32)
                .collect();
            m.elements_mut(kind).push(&nodes, e as i32);
        }
    }
    m
}

struct Samples {
    binary: Vec<Vec<u8>>,
    ascii: Vec<Vec<u8>>,
}

fn samples() -> &'static Samples {
    static SAMPLES: OnceLock<Samples> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let (m3, m2) = (base_mesh(3), base_mesh(2));
        let enc = |m: &Mesh, f, v| meshio::to_bytes(m, f, v).expect("valid mesh");
        let mut binary: Vec<Vec<u8>> = Version::ALL
            .iter()
            .map(|&v| enc(&m3, Format::Binary, v))
            .collect();
        binary.push(enc(&m2, Format::Binary, Version::V4));
        let ascii = vec![
            enc(&m3, Format::Ascii, Version::V2),
            enc(&m2, Format::Ascii, Version::V1),
        ];
        Samples { binary, ascii }
    })
}

/// Runs `f` and returns its result with the largest single allocation it made (this thread).
pub(crate) fn peak_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    PEAK.with(|p| p.set(0));
    let result = f();
    (result, PEAK.with(|p| p.get()))
}

fn read_measured(bytes: &[u8], format: Format) -> (Result<MeshFile, MeshError>, usize) {
    let name = match format {
        Format::Binary => "fuzz.meshb",
        Format::Ascii => "fuzz.mesh",
    };
    PEAK.with(|p| p.set(0));
    let result = meshio::read_bytes(bytes, format, Path::new(name));
    (result, PEAK.with(|p| p.get()))
}

/// Reads damaged bytes and checks the outcome.
fn check(bytes: &[u8], format: Format) -> Result<(), TestCaseError> {
    let (result, peak) = read_measured(bytes, format);
    let (name, place) = match format {
        Format::Binary => ("fuzz.meshb", "byte "),
        Format::Ascii => ("fuzz.mesh", "line "),
    };
    let limit = 8 * bytes.len() + (64 << 10);
    prop_assert!(
        peak <= limit,
        "allocated {peak} bytes reading {} bytes",
        bytes.len()
    );
    match result {
        Ok(file) => {
            let m = &file.mesh;
            prop_assert!(m.dimension == 2 || m.dimension == 3);
            prop_assert_eq!(m.vertices.len(), m.vertex_refs.len());
            prop_assert!(m.validate_indices().is_ok());
            if m.dimension == 2 {
                prop_assert!(m.vertices.iter().all(|p| p[2] == 0.0));
            }
        }
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(
                msg.starts_with(&format!("{name}: {place}")),
                "message lacks file and location: {}",
                msg
            );
            prop_assert!(!msg.contains('\n'), "{}", msg);
            prop_assert!(e.location().is_some());
            let count = match &e {
                MeshError::CountTooLarge { count, .. }
                | MeshError::CountTooLargeText { count, .. } => Some(count.to_string()),
                MeshError::NegativeCount { count, .. } => Some(count.to_string()),
                _ => None,
            };
            if let Some(count) = count {
                prop_assert!(msg.contains(&count), "{} lacks the count {}", msg, count);
            }
        }
    }
    Ok(())
}

/// Offsets of the position and count fields of an undamaged little-endian file.
fn header_fields(b: &[u8], version: Version) -> Vec<(usize, usize)> {
    let (p, c) = match version.number() {
        1 | 2 => (4, 4),
        3 => (8, 4),
        _ => (8, 8),
    };
    let word = |at: usize, n: usize| {
        let mut w = [0u8; 8];
        w[..n].copy_from_slice(&b[at..at + n]);
        i64::from_le_bytes(w) as usize
    };
    let mut fields = vec![(12, p), (12 + p, 4), (4, 4), (0, 4), (8, 4)];
    let mut at = word(12, p);
    while at != 0 && word(at, 4) != 54 {
        fields.push((at, 4));
        fields.push((at + 4, p));
        fields.push((at + 4 + p, c));
        at = word(at + 4, p);
    }
    fields.push((at + 4, p));
    fields
}

fn extreme() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        Just(-1),
        Just(1),
        Just(i64::from(i32::MAX)),
        Just(1 << 31),
        Just(i64::from(u32::MAX)),
        Just(1 << 40),
        Just(i64::MAX),
        Just(i64::MIN),
        any::<i64>(),
        any::<i32>().prop_map(i64::from),
        (0i64..20_000),
    ]
}

fn garbage_token() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "abc",
            "-1",
            "0",
            "1",
            "99999999999999999999",
            "4294967296",
            "2147483648",
            "-9223372036854775808",
            "1e999",
            "nan",
            "inf",
            "#",
            "\n",
            "Vertices",
            "Triangles",
            "Tetrahedra",
            "End",
            "Dimension",
            "MeshVersionFormatted",
            "FloatingPointPrecision",
            "Corners",
            "\u{0}",
            "\u{e9}",
        ])
        .prop_map(str::to_owned),
        "[a-zA-Z0-9 .#\n+-]{0,12}",
    ]
}

proptest! {
    // 256 cases per property; PROPTEST_CASES=N runs more.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
    ))]

    #[test]
    fn binary_with_flipped_bytes(
        file in any::<Index>(),
        flips in prop::collection::vec((any::<Index>(), any::<u8>()), 1..10),
    ) {
        let mut b = file.get(&samples().binary).clone();
        for (at, value) in flips {
            let i = at.index(b.len());
            b[i] = value;
        }
        check(&b, Format::Binary)?;
    }

    #[test]
    fn binary_with_overwritten_words(
        file in any::<Index>(),
        words in prop::collection::vec((any::<Index>(), prop::bool::ANY, extreme()), 1..4),
    ) {
        let mut b = file.get(&samples().binary).clone();
        for (at, wide, value) in words {
            let n = if wide { 8 } else { 4 };
            let i = at.index(b.len() / 4) * 4;
            let end = (i + n).min(b.len());
            b[i..end].copy_from_slice(&value.to_le_bytes()[..end - i]);
        }
        check(&b, Format::Binary)?;
    }

    #[test]
    fn binary_with_extreme_header_fields(
        file in 0usize..4,
        field in any::<Index>(),
        value in extreme(),
    ) {
        let version = Version::ALL[file];
        let mut b = samples().binary[file].clone();
        let fields = header_fields(&b, version);
        let (at, n) = *field.get(&fields);
        b[at..at + n].copy_from_slice(&value.to_le_bytes()[..n]);
        check(&b, Format::Binary)?;
    }

    #[test]
    fn binary_truncated(file in any::<Index>(), len in any::<Index>()) {
        let b = file.get(&samples().binary);
        check(&b[..len.index(b.len())], Format::Binary)?;
    }

    #[test]
    fn ascii_with_garbage_tokens(
        file in any::<Index>(),
        tokens in prop::collection::vec((any::<Index>(), garbage_token(), 0u8..3), 1..5),
    ) {
        let mut b = file.get(&samples().ascii).clone();
        for (at, token, spacing) in tokens {
            let i = at.index(b.len() + 1);
            let text = match spacing {
                0 => token,
                1 => format!(" {token} "),
                _ => format!("\n{token}\n"),
            };
            b.splice(i..i, text.into_bytes());
        }
        check(&b, Format::Ascii)?;
    }

    #[test]
    fn ascii_with_extreme_counts(
        file in any::<Index>(),
        which in any::<Index>(),
        value in extreme(),
    ) {
        let text = String::from_utf8(file.get(&samples().ascii).clone()).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let counts: Vec<usize> = (1..lines.len())
            .filter(|&i| lines[i - 1].chars().all(|c| c.is_ascii_alphabetic()) && !lines[i - 1].is_empty())
            .filter(|&i| lines[i].parse::<u64>().is_ok())
            .collect();
        let i = *which.get(&counts);
        lines[i] = value.to_string();
        check(lines.join("\n").as_bytes(), Format::Ascii)?;
    }

    #[test]
    fn ascii_with_flipped_bytes_and_truncation(
        file in any::<Index>(),
        flips in prop::collection::vec((any::<Index>(), any::<u8>()), 0..6),
        len in any::<Index>(),
    ) {
        let mut b = file.get(&samples().ascii).clone();
        for (at, value) in flips {
            let i = at.index(b.len());
            b[i] = value;
        }
        b.truncate(len.index(b.len() + 1));
        check(&b, Format::Ascii)?;
    }
}

#[test]
fn samples_are_valid_and_a_few_hundred_entities() {
    for (bytes, format) in samples()
        .binary
        .iter()
        .map(|b| (b, Format::Binary))
        .chain(samples().ascii.iter().map(|b| (b, Format::Ascii)))
    {
        let (result, peak) = read_measured(bytes, format);
        let file = result.unwrap_or_else(|e| panic!("{e}"));
        let m = &file.mesh;
        let entities: usize =
            m.vertices.len() + ElementKind::ALL.iter().map(|&k| m.count(k)).sum::<usize>();
        assert!((300..1000).contains(&entities), "{entities}");
        assert!(peak <= 8 * bytes.len(), "{peak} for {} bytes", bytes.len());
    }
}

#[test]
fn the_peak_allocation_is_measured() {
    // Guards the allocator hook itself: a large request must show.
    PEAK.with(|p| p.set(0));
    let v: Vec<u8> = Vec::with_capacity(1 << 20);
    assert!(PEAK.with(|p| p.get()) >= 1 << 20);
    drop(v);
}
