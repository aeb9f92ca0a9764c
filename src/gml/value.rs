//! The value types of solution data: i8, i32, f32 or f64, scalar or vector of 2, 4, 8 or 16,
//! typed on the Rust side so that a wrong type is a compile error.

use std::fmt;

use bytemuck::Pod;

/// Scalar component type of a solution field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// OpenCL `char`, Rust `i8`.
    I8,
    /// OpenCL `int`, Rust `i32`.
    I32,
    /// OpenCL `float`, Rust `f32`.
    F32,
    /// OpenCL `double`, Rust `f64` (needs `cl_khr_fp64`).
    F64,
}

impl Scalar {
    /// The OpenCL C name of the scalar type.
    pub fn opencl(self) -> &'static str {
        match self {
            Self::I8 => "char",
            Self::I32 => "int",
            Self::F32 => "float",
            Self::F64 => "double",
        }
    }
}

/// An OpenCL value type: a scalar and a vector width of 1, 2, 4, 8 or 16.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueType {
    /// Component type.
    pub scalar: Scalar,
    /// Components per value: 1 (scalar), 2, 4, 8 or 16.
    pub width: usize,
}

impl ValueType {
    /// The OpenCL C spelling: `float`, `int4`, `double16`, …
    pub fn opencl(self) -> String {
        if self.width == 1 {
            self.scalar.opencl().to_string()
        } else {
            format!("{}{}", self.scalar.opencl(), self.width)
        }
    }

    /// An OpenCL literal of this type with every component zero.
    pub fn zero(self) -> String {
        format!("(({})0)", self.opencl())
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.opencl())
    }
}

/// A Rust type that stands for one OpenCL value: `f32` for `float`, `[f32; 4]` for `float4`,
/// `[i32; 16]` for `int16`. Sealed: only the types GMlib offers implement it.
pub trait Value: Pod + sealed::Sealed {
    /// The OpenCL type this Rust type mirrors.
    const TYPE: ValueType;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! values {
    ($($t:ty => $s:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Value for $t {
            const TYPE: ValueType = ValueType { scalar: Scalar::$s, width: 1 };
        }
        values!(@vec $t => $s; 2, 4, 8, 16);
    )*};
    (@vec $t:ty => $s:ident; $($n:literal),*) => {$(
        impl sealed::Sealed for [$t; $n] {}
        impl Value for [$t; $n] {
            const TYPE: ValueType = ValueType { scalar: Scalar::$s, width: $n };
        }
    )*};
}

values!(i8 => I8, i32 => I32, f32 => F32, f64 => F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_types_map_to_opencl_types() {
        assert_eq!(<f32 as Value>::TYPE.opencl(), "float");
        assert_eq!(<[f32; 4] as Value>::TYPE.opencl(), "float4");
        assert_eq!(<[i8; 16] as Value>::TYPE.opencl(), "char16");
        assert_eq!(<[f64; 2] as Value>::TYPE.opencl(), "double2");
        assert_eq!(<i32 as Value>::TYPE.zero(), "((int)0)");
        assert_eq!(std::mem::size_of::<[f64; 16]>(), 128);
    }
}
