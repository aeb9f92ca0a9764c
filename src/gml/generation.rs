//! Generations of mesh data: which mesh data every datum was made for, and whether they are
//! still the current ones.
//!
//! Each time the mesh data of a kind are created, replaced (`new_mesh`, an import,
//! `extract_edges`/`extract_faces`) or removed (`free`, an import whose mesh lacks the kind),
//! the kind gets a new generation. Solutions, user links and element tables record the
//! generations they were made for ([`Stamp`]); once one of them is no longer current the datum
//! is stale. Stale data are not freed behind the user's back: their memory is released but
//! their handles stay known, so that every later use (compiling, launching, enqueueing,
//! reading, writing, exposing a buffer) is a [`GmlError::StaleData`] naming the datum and what
//! changed, rather than an unknown handle or an access out of bounds.

use super::data::{Datum, Stamp};
use super::error::{GmlError, Result};
use crate::mesh_kind::MeshKind;

/// The last change of one kind's mesh data.
#[derive(Clone, Debug)]
struct MeshEvent {
    generation: u64,
    /// Entity count of the current data; `None` once removed.
    lines: Option<usize>,
    /// The call that made the change (`import_mesh`, `extract_faces`, …).
    cause: String,
}

/// The generation of every kind's mesh data (checked on every use of a datum, so an array
/// indexed by kind rather than a map).
#[derive(Default)]
pub(crate) struct MeshLog {
    serial: u64,
    events: [Option<MeshEvent>; MeshKind::ALL.len()],
}

impl MeshLog {
    /// Records new mesh data of `kind` with `lines` entities and returns its generation.
    pub fn replace(&mut self, kind: MeshKind, lines: usize, cause: &str) -> u64 {
        self.serial += 1;
        self.events[kind as usize] = Some(MeshEvent {
            generation: self.serial,
            lines: Some(lines),
            cause: cause.to_string(),
        });
        self.serial
    }

    /// Records that the mesh data of `kind` were removed.
    pub fn remove(&mut self, kind: MeshKind, cause: &str) {
        self.serial += 1;
        self.events[kind as usize] = Some(MeshEvent {
            generation: self.serial,
            lines: None,
            cause: cause.to_string(),
        });
    }

    /// The stamp of the current mesh data of `kind`, if there are some.
    pub fn stamp(&self, kind: MeshKind) -> Option<Stamp> {
        let event = self.events[kind as usize].as_ref()?;
        Some(Stamp {
            kind,
            generation: event.generation,
            lines: event.lines?,
        })
    }

    /// The current generation of `kind`'s mesh data (0 before any).
    pub fn generation(&self, kind: MeshKind) -> u64 {
        self.events[kind as usize]
            .as_ref()
            .map_or(0, |e| e.generation)
    }

    /// Whether every mesh datum `datum` was made for is still current, and nothing retired it.
    pub fn is_current(&self, datum: &Datum) -> bool {
        datum.retired.is_none() && datum.made_for.iter().all(|s| self.holds(s))
    }

    fn holds(&self, stamp: &Stamp) -> bool {
        self.events[stamp.kind as usize]
            .as_ref()
            .is_some_and(|e| e.generation == stamp.generation && e.lines.is_some())
    }

    /// `Ok` when `datum` is current, else the error that says what changed.
    pub fn check(&self, datum: &Datum) -> Result<()> {
        if let Some(why) = &datum.retired {
            return Err(GmlError::Retired {
                data: datum.role.name().to_string(),
                why: why.clone(),
            });
        }
        let Some(stamp) = datum.made_for.iter().find(|s| !self.holds(s)) else {
            return Ok(());
        };
        let change = match &self.events[stamp.kind as usize] {
            Some(MeshEvent {
                generation,
                lines: Some(lines),
                cause,
            }) => format!("{cause} replaced them (generation {generation}, {lines} entities)"),
            Some(MeshEvent {
                generation, cause, ..
            }) => format!("{cause} removed them (generation {generation})"),
            None => "they no longer exist".to_string(),
        };
        let data = match &datum.role {
            super::data::Role::Mesh(kind) => format!("{kind} mesh data"),
            role => role.name().to_string(),
        };
        Err(GmlError::StaleData {
            kernel: None,
            data,
            kind: stamp.kind,
            made_for: stamp.generation,
            lines: stamp.lines,
            change,
        })
    }
}
