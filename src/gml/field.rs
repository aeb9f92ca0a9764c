//! A solution field's device buffer, handed to other modules (interop, sort, snow) so they can
//! bind it in their own kernels without a copy.

use std::marker::PhantomData;
use std::sync::{Arc, Weak};

use opencl3::types::cl_mem;

use super::Gml;
use super::data::Solution;
use super::error::{GmlError, Result};
use super::value::Value;
use crate::cl::{self, BufferArg, RetainedMem};

/// The device buffer of one [`Solution`]: `len()` values of `T`, line-major, exactly what gml
/// kernels read and write.
///
/// It holds its own reference to the OpenCL buffer, so it never dangles; and it knows whether
/// the data it was made for still exists. Once the field is freed or goes stale (the mesh data
/// of its kind replaced by `new_mesh`, an import, `extract_edges`/`extract_faces`, or freed),
/// binding it is an error ([`cl::Error::Stale`]) rather than a silent use of the old values.
pub struct FieldBuffer<T: Value> {
    mem: RetainedMem,
    len: usize,
    name: String,
    generation: u64,
    field: Weak<()>,
    mesh: Weak<()>,
    _type: PhantomData<fn() -> T>,
}

impl<T: Value> FieldBuffer<T> {
    /// Whether the field and the mesh data it was made for still exist.
    pub fn is_current(&self) -> bool {
        self.field.strong_count() > 0 && self.mesh.strong_count() > 0
    }

    /// The field's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The generation of the mesh data of the field's kind this buffer was made for (see
    /// [`Gml::mesh_generation`]).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

impl<T: Value> std::fmt::Debug for FieldBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldBuffer")
            .field("name", &self.name)
            .field("len", &self.len)
            .field("generation", &self.generation)
            .field("current", &self.is_current())
            .finish()
    }
}

impl<T: Value> BufferArg<T> for FieldBuffer<T> {
    fn cl_mem_checked(&self) -> cl::Result<cl_mem> {
        if !self.is_current() {
            return Err(cl::Error::Stale(format!(
                "the device buffer of field `{}` was made for mesh data of generation {} that \
                 have since been replaced or freed (or the field was); ask gml for it again",
                self.name, self.generation
            )));
        }
        Ok(self.mem.get())
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// Uploads `field` if needed and returns its buffer handle.
pub(crate) fn field_buffer<T: Value>(gml: &mut Gml, field: Solution<T>) -> Result<FieldBuffer<T>> {
    let kind = gml.datum(field.id)?.role.kind();
    let mesh_alive = gml.datum(gml.mesh(kind)?)?.alive.clone();
    let generation = gml.mesh_generation(kind);
    let context = gml.context.clone();
    let datum = gml.datum_mut_quiet(field.id)?;
    datum.upload(&context)?;
    let buffer = datum
        .device
        .as_ref()
        .ok_or(GmlError::UnknownData(field.id.index as usize))?;
    Ok(FieldBuffer {
        // SAFETY: the datum's device buffer is alive (borrowed just above).
        mem: unsafe { RetainedMem::retain(buffer.cl_mem())? },
        len: datum.lines * datum.role.items(),
        name: datum.role.name().to_string(),
        generation,
        field: Arc::downgrade(&datum.alive),
        mesh: Arc::downgrade(&mesh_alive),
        _type: PhantomData,
    })
}
