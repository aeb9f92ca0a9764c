//! The one rule every writer of a command follows, checked before any work starts:
//!
//! - an output never names an input of the same command, nor another output of it: the same
//!   file by path, `..`, symbolic link or hard link (device and inode), and a file that a
//!   directory output would write (`--record DIR`'s `frame_00000.png`, `--vtu-every DIR`'s
//!   `states.pvd`) counts as that output;
//! - an existing file is replaced only when it is recognisably the kind this writer writes (a
//!   PNG, a VTK XML file, a sweep CSV with our header, …): anything else needs `--force`.
//!
//! A command lists its inputs and outputs in an [`OutputPlan`] and calls
//! [`OutputPlan::check`]; the error names both paths and the options that give them.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{OutputError, check_image, check_writable, same_file};
use crate::input::SpecialKind;

/// The kind of file a writer writes, recognised by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A PNG image.
    Png,
    /// A VTK XML file: an unstructured grid (`.vtu`) or a collection (`.pvd`).
    Vtk,
    /// A CSV whose header starts with the given column names (e.g. `schema,date,` for a sweep).
    Csv(&'static str),
    /// A JSON document (an object or an array).
    Json,
    /// A libMeshb file: a mesh or a solution, ASCII (`MeshVersionFormatted`) or binary (the
    /// 32-bit code 1 in either byte order).
    Meshb,
    /// A GIF image (`GIF87a` or `GIF89a`).
    Gif,
    /// An MP4 video (an ISO base media file: `ftyp` after the first box's size).
    Mp4,
    /// A markdown file that starts with the given line (`snowsim plot`'s `summary.md`).
    Markdown(&'static str),
}

/// The first line of `snowsim plot`'s `summary.md`, by which it is recognised.
pub const SUMMARY_TITLE: &str = "# Sweep summary";

impl FileKind {
    /// What the kind is called in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "PNG image",
            Self::Vtk => "VTK XML file",
            Self::Csv(_) => "CSV file of this command",
            Self::Json => "JSON file",
            Self::Meshb => "mesh or solution file (.mesh, .meshb, .sol, .solb)",
            Self::Gif => "GIF image",
            Self::Mp4 => "MP4 video",
            Self::Markdown(_) => "markdown file of this command",
        }
    }

    /// The kind a directory output's file is, by its extension (`.png`, `.vtu`/`.pvd`,
    /// `.json`); `None` for others.
    pub fn of_name(name: &str) -> Option<Self> {
        let ext = Path::new(name).extension()?.to_str()?;
        match ext.to_ascii_lowercase().as_str() {
            "png" => Some(Self::Png),
            "vtu" | "pvd" => Some(Self::Vtk),
            "json" => Some(Self::Json),
            "md" => Some(Self::Markdown(SUMMARY_TITLE)),
            _ => None,
        }
    }

    /// Whether `head` (the first bytes of a file) is a file of this kind.
    pub fn recognises(self, head: &[u8]) -> bool {
        let text = String::from_utf8_lossy(head);
        let text = text.trim_start_matches('\u{feff}').trim_start();
        match self {
            Self::Png => head.starts_with(b"\x89PNG\r\n\x1a\n"),
            Self::Gif => head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a"),
            Self::Mp4 => head.get(4..8) == Some(b"ftyp"),
            Self::Vtk => text.starts_with("<?xml") && text.contains("<VTKFile"),
            Self::Csv(header) | Self::Markdown(header) => text.starts_with(header),
            Self::Json => text.starts_with('{') || text.starts_with('['),
            Self::Meshb => {
                let code = head.get(..4);
                code == Some(&1i32.to_le_bytes()[..])
                    || code == Some(&1i32.to_be_bytes()[..])
                    || text
                        .lines()
                        .map(str::trim)
                        .find(|l| !l.is_empty() && !l.starts_with('#'))
                        .is_some_and(|l| l.starts_with("MeshVersionFormatted"))
            }
        }
    }
}

/// The first bytes of `path` (at most 4 KiB), `None` when it cannot be read as a file. A
/// FIFO or device is judged by `stat` and never opened (opening a FIFO blocks until a writer
/// comes); the open is non-blocking in case one is swapped in meanwhile.
fn head(path: &Path) -> Option<Vec<u8>> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut head = Vec::with_capacity(4096);
    file.take(4096).read_to_end(&mut head).ok()?;
    Some(head)
}

/// A directory output: the directory and the files a writer puts in it.
struct DirOutput {
    role: String,
    dir: PathBuf,
    /// Whether a file name is one this writer writes into the directory (its kind is that of
    /// its extension, [`FileKind::of_name`]).
    names: fn(&str) -> bool,
}

/// The inputs and outputs of one command, checked together against the output rule.
#[derive(Default)]
pub struct OutputPlan {
    inputs: Vec<(String, PathBuf)>,
    files: Vec<(String, PathBuf, FileKind)>,
    dirs: Vec<DirOutput>,
    force: bool,
}

impl OutputPlan {
    /// An empty plan; `force` (the command's `--force`) lets outputs replace existing files of
    /// another kind (never an input or another output).
    pub fn new(force: bool) -> Self {
        Self {
            force,
            ..Self::default()
        }
    }

    /// An input the command reads, named by its option or role (`--scene`, `the heightmap`).
    pub fn input(&mut self, role: impl Into<String>, path: impl Into<PathBuf>) -> &mut Self {
        self.inputs.push((role.into(), path.into()));
        self
    }

    /// A file the command writes, of `kind`.
    pub fn file(
        &mut self,
        role: impl Into<String>,
        path: impl Into<PathBuf>,
        kind: FileKind,
    ) -> &mut Self {
        self.files.push((role.into(), path.into(), kind));
        self
    }

    /// A directory the command writes files into: those whose names `names` accepts, each of
    /// the kind its extension says.
    pub fn dir(
        &mut self,
        role: impl Into<String>,
        dir: impl Into<PathBuf>,
        names: fn(&str) -> bool,
    ) -> &mut Self {
        self.dirs.push(DirOutput {
            role: role.into(),
            dir: dir.into(),
            names,
        });
        self
    }

    /// Checks the rule: every output file can be written; none is an input or another output
    /// (by path, link or inode), nor a file a directory output writes; an existing file is
    /// replaced only when it is of the writer's kind, or with `--force`; an input inside a
    /// directory output is not among the names written there, and no file already there
    /// under such a name is an input or an output file by a link (symbolic or hard).
    pub fn check(&self) -> Result<(), OutputError> {
        let collision = |first: &str, second: &str, a: &Path, b: &Path| OutputError::Collision {
            first: first.to_string(),
            first_path: a.to_path_buf(),
            second: second.to_string(),
            second_path: b.to_path_buf(),
        };
        for (i, (role, path, kind)) in self.files.iter().enumerate() {
            match kind {
                FileKind::Png => check_image(path)?,
                _ => check_writable(path)?,
            };
            for (input, input_path) in &self.inputs {
                if same_file(path, input_path) {
                    return Err(collision(role, input, path, input_path));
                }
            }
            for (other, other_path, _) in &self.files[i + 1..] {
                if same_file(path, other_path) {
                    return Err(collision(role, other, path, other_path));
                }
            }
            for d in &self.dirs {
                if written_by(d, path) {
                    return Err(collision(role, &d.role, path, &d.dir));
                }
            }
            self.check_replace(role, path, *kind)?;
        }
        for (i, d) in self.dirs.iter().enumerate() {
            if let Ok(metadata) = std::fs::metadata(&d.dir)
                && !metadata.is_dir()
            {
                return Err(OutputError::NotADirectory {
                    role: d.role.clone(),
                    path: d.dir.clone(),
                    what: SpecialKind::of(&metadata)
                        .map_or_else(|| "a file".to_string(), |kind| kind.to_string()),
                });
            }
            for (input, input_path) in &self.inputs {
                if written_by(d, input_path) {
                    return Err(collision(&d.role, input, &d.dir, input_path));
                }
            }
            for other in &self.dirs[i + 1..] {
                if same_dir(&d.dir, &other.dir) {
                    return Err(collision(&d.role, &other.role, &d.dir, &other.dir));
                }
            }
            // Files already there that the writer would replace: none may be an input or
            // another output through a link (symbolic: a write follows it; hard: the rule
            // compares inodes), and each must be of the writer's kind unless forced.
            if let Ok(entries) = std::fs::read_dir(&d.dir) {
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    let Some(name) = name.to_str().filter(|n| (d.names)(n)) else {
                        continue;
                    };
                    let path = entry.path();
                    for (input, input_path) in &self.inputs {
                        if same_file(&path, input_path) {
                            return Err(collision(&d.role, input, &path, input_path));
                        }
                    }
                    for (other, other_path, _) in &self.files {
                        if same_file(&path, other_path) {
                            return Err(collision(&d.role, other, &path, other_path));
                        }
                    }
                    if let Some(kind) = FileKind::of_name(name) {
                        self.check_replace(&d.role, &path, kind)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Refuses to replace an existing file at `path` that is not of `kind`, unless forced.
    fn check_replace(&self, role: &str, path: &Path, kind: FileKind) -> Result<(), OutputError> {
        if self.force || std::fs::metadata(path).is_err() {
            return Ok(());
        }
        match head(path) {
            Some(head) if head.is_empty() || kind.recognises(&head) => Ok(()),
            _ => Err(OutputError::NotOurs {
                role: role.to_string(),
                path: path.to_path_buf(),
                kind: kind.name(),
            }),
        }
    }
}

/// Whether `a` and `b` are the same existing directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Whether `path` is a file the directory output `d` writes: in that directory (once links
/// are followed) and of a name it writes.
fn written_by(d: &DirOutput, path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    if !(d.names)(name) {
        return false;
    }
    let candidate = d.dir.join(name);
    same_file(&candidate, path)
}

/// `piece_00000.vtu`, … : the names a `.pvtu` state's pieces have in their directory
/// ([`crate::meshio::pvtu::pieces_dir`]).
pub fn piece_file_name(name: &str) -> bool {
    numbered(name, "piece_", ".vtu")
}

/// `frame_00000.png`, … : the names `--record DIR` writes.
pub fn record_frame_name(name: &str) -> bool {
    numbered(name, "frame_", ".png")
}

/// `state_00000.vtu`, … and `states.pvd`: the names `--vtu-every K DIR` writes.
pub fn state_series_name(name: &str) -> bool {
    name == "states.pvd"
        || numbered(name, "state_", ".vtu")
        || numbered(name, "state_", ".cover.vtu")
}

/// Where the cover at its own resolution goes beside a state file: `X.vtu` or `X.pvtu` →
/// `X.cover.vtu` (any other name gets `.cover.vtu` appended).
pub fn cover_path(state: &Path) -> PathBuf {
    let name = state
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let lower = name.to_ascii_lowercase();
    let stem = [".pvtu", ".vtu"]
        .iter()
        .find(|ext| lower.ends_with(*ext))
        .map_or(name.as_str(), |ext| &name[..name.len() - ext.len()]);
    state.with_file_name(format!("{stem}.cover.vtu"))
}

/// The names `snowsim plot --out DIR` writes: each figure's PNG and JSON, and `summary.md`.
pub fn plot_name(name: &str) -> bool {
    name == "summary.md"
        || ["fps_particles", "fps_tets", "stages", "speedup", "devices"]
            .iter()
            .any(|f| name == format!("{f}.png") || name == format!("{f}.json"))
}

/// Whether `name` is `prefix`, five digits or more, `suffix`.
fn numbered(name: &str, prefix: &str, suffix: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|n| n.strip_suffix(suffix))
        .is_some_and(|d| d.len() >= 5 && d.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cover_goes_beside_a_state_of_either_kind() {
        let cover = |s: &str| cover_path(Path::new(s)).display().to_string();
        assert_eq!(cover("out/x.vtu"), "out/x.cover.vtu");
        assert_eq!(cover("out/x.pvtu"), "out/x.cover.vtu");
        assert_eq!(cover("out/X.PVTU"), "out/X.cover.vtu");
        assert_eq!(cover("out/x"), "out/x.cover.vtu");
        assert!(piece_file_name("piece_00012.vtu") && !piece_file_name("piece_1.vtu"));
    }

    #[test]
    fn kinds_are_recognised_by_their_first_bytes() {
        assert!(FileKind::Png.recognises(b"\x89PNG\r\n\x1a\n rest"));
        assert!(!FileKind::Png.recognises(b"name = \"valley\""));
        assert!(FileKind::Vtk.recognises(b"<?xml version=\"1.0\"?>\n<VTKFile type="));
        assert!(!FileKind::Vtk.recognises(b"<?xml version=\"1.0\"?>\n<svg>"));
        assert!(FileKind::Csv("schema,date,").recognises(b"schema,date,device\n1,2,3"));
        assert!(!FileKind::Csv("schema,date,").recognises(b"[scene]\nname = 1"));
        assert!(FileKind::Json.recognises(b"  {\"a\": 1}"));
        assert!(!FileKind::Json.recognises(b"a,b\n"));
        assert!(FileKind::Meshb.recognises(b"# gmsh\nMeshVersionFormatted 2\n"));
        assert!(FileKind::Meshb.recognises(&[1, 0, 0, 0, 2, 0, 0, 0]));
        assert!(FileKind::Meshb.recognises(&[0, 0, 0, 1, 0, 0, 0, 2]));
        assert!(!FileKind::Meshb.recognises(b"[domain]\nflat = true\n"));
    }

    #[test]
    fn directory_outputs_name_their_files() {
        assert!(record_frame_name("frame_00012.png"));
        assert!(record_frame_name("frame_123456.png"));
        assert!(!record_frame_name("frame_1.png"));
        assert!(!record_frame_name("shot.png"));
        assert!(state_series_name("states.pvd"));
        assert!(state_series_name("state_00003.vtu"));
        assert!(!state_series_name("state.vtu"));
    }
}
