//! The user's parameter struct, mirrored between a `#[repr(C)]` Rust type and an OpenCL
//! `GmlParSct`, and passed to every kernel as `GmlPar`.

use std::marker::PhantomData;

use bytemuck::Pod;
use opencl3::kernel::ExecuteKernel;

use super::Gml;
use super::error::{GmlError, Result};
use crate::cl::{self, DeviceBuffer, Program, Source};

/// Handle to the declared parameters, typed by the Rust struct they mirror.
pub struct Parameters<P> {
    _type: PhantomData<fn() -> P>,
    instance: u32,
}

impl<P> std::fmt::Debug for Parameters<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Parameters<{}>", std::any::type_name::<P>())
    }
}

/// The parameter block of an instance.
pub(crate) struct Block {
    pub source: String,
    pub size: usize,
    pub buffer: DeviceBuffer<u8>,
}

/// Used when no parameters are declared, so every kernel has the same `GmlPar` argument.
const EMPTY: &str = "typedef struct { int GmlUnused; } GmlParSct;\n";

impl Gml {
    pub(crate) fn params_source(&self) -> String {
        self.params
            .as_ref()
            .map_or_else(|| EMPTY.to_string(), |p| p.source.clone())
    }

    pub(crate) fn params_buffer(&self) -> Option<&DeviceBuffer<u8>> {
        self.params.as_ref().map(|p| &p.buffer)
    }

    /// Allocates the empty block when no parameters were declared.
    pub(crate) fn ensure_params(&mut self) -> Result<()> {
        if self.params.is_none() {
            self.params = Some(Block {
                source: EMPTY.to_string(),
                size: 4,
                buffer: DeviceBuffer::zeroed(&self.context, 4)?,
            });
        }
        Ok(())
    }
}

/// Compiles `opencl`, asks the device for `sizeof(GmlParSct)` and compares it with `P`'s size.
pub(crate) fn declare<P: Pod>(gml: &mut Gml, opencl: &str) -> Result<Parameters<P>> {
    let probe =
        "__kernel void gml_parameter_size(__global uint *size) { size[0] = sizeof(GmlParSct); }\n";
    let program = Program::build(
        &gml.context,
        &[
            Source::new("parameters", opencl.to_string()),
            Source::new("gml_parameter_size", probe),
        ],
        "",
    )?;
    let kernel = program.kernel("gml_parameter_size")?;
    let out = DeviceBuffer::<u32>::zeroed(&gml.context, 1)?;
    // SAFETY: one buffer argument of one uint, written by a single work-item.
    let event = unsafe {
        ExecuteKernel::new(&kernel)
            .set_arg(out.cl_buffer())
            .set_global_work_size(1)
            .enqueue_nd_range(gml.context.queue())
    }
    .map_err(|code| cl::Error::Api {
        call: "clEnqueueNDRangeKernel(gml_parameter_size)".into(),
        code,
    })?;
    cl::event_duration(&event)?;
    let device = out.read()?[0] as usize;
    let host = std::mem::size_of::<P>();
    if device != host {
        return Err(GmlError::ParameterLayout { device, host });
    }
    gml.params = Some(Block {
        source: opencl.to_string(),
        size: host,
        buffer: DeviceBuffer::zeroed(&gml.context, host.max(1))?,
    });
    Ok(Parameters {
        _type: PhantomData,
        instance: gml.instance,
    })
}

fn block<'a, P>(gml: &'a mut Gml, parameters: &Parameters<P>) -> Result<&'a mut Block> {
    if parameters.instance != gml.instance {
        return Err(GmlError::NoParameters);
    }
    match &mut gml.params {
        Some(b) if b.size == std::mem::size_of::<P>() => Ok(b),
        _ => Err(GmlError::NoParameters),
    }
}

pub(crate) fn upload<P: Pod>(gml: &mut Gml, parameters: &Parameters<P>, value: &P) -> Result<()> {
    block(gml, parameters)?
        .buffer
        .write(bytemuck::bytes_of(value))?;
    Ok(())
}

pub(crate) fn download<P: Pod>(gml: &mut Gml, parameters: &Parameters<P>) -> Result<P> {
    let bytes = block(gml, parameters)?.buffer.read()?;
    Ok(bytemuck::pod_read_unaligned(&bytes))
}
