//! libMeshb keyword codes and names.
//!
//! The reader interprets only a few keywords; the full name table (libMeshb 8) lets it report
//! the others by name and, in ASCII files, find where a skipped keyword's data ends: at the next
//! token that is a known keyword name, as libMeshb's own scan does.

pub(crate) const MESH_VERSION_FORMATTED: i32 = 1;
pub(crate) const DIMENSION: i32 = 3;
pub(crate) const VERTICES: i32 = 4;
pub(crate) const END: i32 = 54;
pub(crate) const FLOATING_POINT_PRECISION: i32 = 155;

/// Names indexed by code; `""` marks reserved codes.
const NAMES: [&str; 241] = [
    "",
    "MeshVersionFormatted",
    "",
    "Dimension",
    "Vertices",
    "Edges",
    "Triangles",
    "Quadrilaterals",
    "Tetrahedra",
    "Prisms",
    "Hexahedra",
    "",
    "",
    "Corners",
    "Ridges",
    "RequiredVertices",
    "RequiredEdges",
    "RequiredTriangles",
    "RequiredQuadrilaterals",
    "TangentAtEdgeVertices",
    "NormalAtVertices",
    "NormalAtTriangleVertices",
    "NormalAtQuadrilateralVertices",
    "AngleOfCornerBound",
    "TrianglesP2",
    "EdgesP2",
    "SolAtPyramids",
    "QuadrilateralsQ2",
    "ISolAtPyramids",
    "SubDomainFromGeom",
    "TetrahedraP2",
    "Fault_NearTri",
    "Fault_Inter",
    "HexahedraQ2",
    "ExtraVerticesAtEdges",
    "ExtraVerticesAtTriangles",
    "ExtraVerticesAtQuadrilaterals",
    "ExtraVerticesAtTetrahedra",
    "ExtraVerticesAtPrisms",
    "ExtraVerticesAtHexahedra",
    "VerticesOnGeometricVertices",
    "VerticesOnGeometricEdges",
    "VerticesOnGeometricTriangles",
    "VerticesOnGeometricQuadrilaterals",
    "EdgesOnGeometricEdges",
    "Fault_FreeEdge",
    "Polyhedra",
    "Polygons",
    "Fault_Overlap",
    "Pyramids",
    "BoundingBox",
    "",
    "PrivateTable",
    "Fault_BadShape",
    "End",
    "TrianglesOnGeometricTriangles",
    "TrianglesOnGeometricQuadrilaterals",
    "QuadrilateralsOnGeometricTriangles",
    "QuadrilateralsOnGeometricQuadrilaterals",
    "Tangents",
    "Normals",
    "TangentAtVertices",
    "SolAtVertices",
    "SolAtEdges",
    "SolAtTriangles",
    "SolAtQuadrilaterals",
    "SolAtTetrahedra",
    "SolAtPrisms",
    "SolAtHexahedra",
    "DSolAtVertices",
    "ISolAtVertices",
    "ISolAtEdges",
    "ISolAtTriangles",
    "ISolAtQuadrilaterals",
    "ISolAtTetrahedra",
    "ISolAtPrisms",
    "ISolAtHexahedra",
    "Iterations",
    "Time",
    "Fault_SmallTri",
    "CoarseHexahedra",
    "Comments",
    "PeriodicVertices",
    "PeriodicEdges",
    "PeriodicTriangles",
    "PeriodicQuadrilaterals",
    "PrismsP2",
    "PyramidsP2",
    "QuadrilateralsQ3",
    "QuadrilateralsQ4",
    "TrianglesP3",
    "TrianglesP4",
    "EdgesP3",
    "EdgesP4",
    "IRefGroups",
    "DRefGroups",
    "TetrahedraP3",
    "TetrahedraP4",
    "HexahedraQ3",
    "HexahedraQ4",
    "PyramidsP3",
    "PyramidsP4",
    "PrismsP3",
    "PrismsP4",
    "HOSolAtEdgesP1",
    "HOSolAtEdgesP2",
    "HOSolAtEdgesP3",
    "HOSolAtTrianglesP1",
    "HOSolAtTrianglesP2",
    "HOSolAtTrianglesP3",
    "HOSolAtQuadrilateralsQ1",
    "HOSolAtQuadrilateralsQ2",
    "HOSolAtQuadrilateralsQ3",
    "HOSolAtTetrahedraP1",
    "HOSolAtTetrahedraP2",
    "HOSolAtTetrahedraP3",
    "HOSolAtPyramidsP1",
    "HOSolAtPyramidsP2",
    "HOSolAtPyramidsP3",
    "HOSolAtPrismsP1",
    "HOSolAtPrismsP2",
    "HOSolAtPrismsP3",
    "HOSolAtHexahedraQ1",
    "HOSolAtHexahedraQ2",
    "HOSolAtHexahedraQ3",
    "BezierBasis",
    "ByteFlow",
    "EdgesP2Ordering",
    "EdgesP3Ordering",
    "TrianglesP2Ordering",
    "TrianglesP3Ordering",
    "QuadrilateralsQ2Ordering",
    "QuadrilateralsQ3Ordering",
    "TetrahedraP2Ordering",
    "TetrahedraP3Ordering",
    "PyramidsP2Ordering",
    "PyramidsP3Ordering",
    "PrismsP2Ordering",
    "PrismsP3Ordering",
    "HexahedraQ2Ordering",
    "HexahedraQ3Ordering",
    "EdgesP1Ordering",
    "EdgesP4Ordering",
    "TrianglesP1Ordering",
    "TrianglesP4Ordering",
    "QuadrilateralsQ1Ordering",
    "QuadrilateralsQ4Ordering",
    "TetrahedraP1Ordering",
    "TetrahedraP4Ordering",
    "PyramidsP1Ordering",
    "PyramidsP4Ordering",
    "PrismsP1Ordering",
    "PrismsP4Ordering",
    "HexahedraQ1Ordering",
    "HexahedraQ4Ordering",
    "FloatingPointPrecision",
    "HOSolAtEdgesP4",
    "HOSolAtTrianglesP4",
    "HOSolAtQuadrilateralsQ4",
    "HOSolAtTetrahedraP4",
    "HOSolAtPyramidsP4",
    "HOSolAtPrismsP4",
    "HOSolAtHexahedraQ4",
    "HOSolAtEdgesP1NodesPositions",
    "HOSolAtEdgesP2NodesPositions",
    "HOSolAtEdgesP3NodesPositions",
    "HOSolAtEdgesP4NodesPositions",
    "HOSolAtTrianglesP1NodesPositions",
    "HOSolAtTrianglesP2NodesPositions",
    "HOSolAtTrianglesP3NodesPositions",
    "HOSolAtTrianglesP4NodesPositions",
    "HOSolAtQuadrilateralsQ1NodesPositions",
    "HOSolAtQuadrilateralsQ2NodesPositions",
    "HOSolAtQuadrilateralsQ3NodesPositions",
    "HOSolAtQuadrilateralsQ4NodesPositions",
    "HOSolAtTetrahedraP1NodesPositions",
    "HOSolAtTetrahedraP2NodesPositions",
    "HOSolAtTetrahedraP3NodesPositions",
    "HOSolAtTetrahedraP4NodesPositions",
    "HOSolAtPyramidsP1NodesPositions",
    "HOSolAtPyramidsP2NodesPositions",
    "HOSolAtPyramidsP3NodesPositions",
    "HOSolAtPyramidsP4NodesPositions",
    "HOSolAtPrismsP1NodesPositions",
    "HOSolAtPrismsP2NodesPositions",
    "HOSolAtPrismsP3NodesPositions",
    "HOSolAtPrismsP4NodesPositions",
    "HOSolAtHexahedraQ1NodesPositions",
    "HOSolAtHexahedraQ2NodesPositions",
    "HOSolAtHexahedraQ3NodesPositions",
    "HOSolAtHexahedraQ4NodesPositions",
    "EdgesReferenceElement",
    "TriangleReferenceElement",
    "QuadrilateralReferenceElement",
    "TetrahedronReferenceElement",
    "PyramidReferenceElement",
    "PrismReferenceElement",
    "HexahedronReferenceElement",
    "BoundaryLayers",
    "ReferenceStrings",
    "Prisms9",
    "Hexahedra12",
    "Quadrilaterals6",
    "BoundaryPolygonHeaders",
    "BoundaryPolygonVertices",
    "InnerPolygonHeaders",
    "InnerPolygonVertices",
    "PolyhedraHeaders",
    "PolyhedraFaces",
    "Domains",
    "VerticesGID",
    "EdgesGID",
    "TrianglesGID",
    "QuadrilateralsGID",
    "TetrahedraGID",
    "PyramidsGID",
    "PrismsGID",
    "HexahedraGID",
    "SolAtBoundaryPolygons",
    "SolAtPolyhedra",
    "VertexOnGeometryNode",
    "VertexOnGeometryEdge",
    "EdgeOnGeometryEdge",
    "VertexOnGeometryFace",
    "EdgeOnGeometryFace",
    "TriangleOnGeometryFace",
    "QuadrialteralOnGeometryFace",
    "MeshOnGeometry",
    "VerticesColour",
    "VerticesGrain",
    "VertexGrainPartitions",
    "EdgeGrainPartitions",
    "TriangleGrainPartitions",
    "QuadrilateralGrainPartitions",
    "TetrahedronGrainPartitions",
    "PyramidGrainPartitions",
    "PrismGrainPartitions",
    "HexahedronGrainPartitions",
    "ColorPartitions",
    "TetrahedraColour",
    "TetrahedraGrain",
];

/// The name of keyword `code`, if libMeshb knows it.
pub(crate) fn name(code: i32) -> Option<&'static str> {
    let name = *NAMES.get(usize::try_from(code).ok()?)?;
    (!name.is_empty()).then_some(name)
}

/// The code of the keyword spelled `token`, if libMeshb knows it.
pub(crate) fn code(token: &[u8]) -> Option<i32> {
    // Keyword names start with a letter: reject numbers without searching the table.
    if !token.first()?.is_ascii_alphabetic() {
        return None;
    }
    let i = NAMES
        .iter()
        .position(|n| !n.is_empty() && n.as_bytes() == token)?;
    i32::try_from(i).ok()
}

/// The first known keyword name that `token` is a strict beginning of (`Tetra` →
/// `Tetrahedra`): what a file cut inside a keyword ends with.
pub(crate) fn completion(token: &[u8]) -> Option<&'static str> {
    if !token.first()?.is_ascii_alphabetic() {
        return None;
    }
    NAMES
        .iter()
        .find(|n| n.len() > token.len() && n.as_bytes().starts_with(token))
        .copied()
}

/// How a skipped keyword is reported: its name, or `code N` when unknown.
pub(crate) fn describe(code: i32) -> String {
    match name(code) {
        Some(n) => n.to_owned(),
        None => format!("code {code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meshio::ElementKind;

    #[test]
    fn table_matches_known_codes() {
        assert_eq!(name(MESH_VERSION_FORMATTED), Some("MeshVersionFormatted"));
        assert_eq!(name(DIMENSION), Some("Dimension"));
        assert_eq!(name(VERTICES), Some("Vertices"));
        assert_eq!(name(END), Some("End"));
        assert_eq!(
            name(FLOATING_POINT_PRECISION),
            Some("FloatingPointPrecision")
        );
        assert_eq!(name(13), Some("Corners"));
        assert_eq!(name(15), Some("RequiredVertices"));
        assert_eq!(name(62), Some("SolAtVertices"));
        assert_eq!(name(199), Some("ReferenceStrings"));
        for k in ElementKind::ALL {
            assert_eq!(name(k.code()), Some(k.keyword()));
            assert_eq!(code(k.keyword().as_bytes()), Some(k.code()));
        }
        assert_eq!(name(0), None);
        assert_eq!(name(11), None);
        assert_eq!(name(-1), None);
        assert_eq!(name(241), None);
        assert_eq!(code(b"Reserved"), None);
        assert_eq!(code(b"12"), None);
        assert_eq!(code(b""), None);
        assert_eq!(describe(1000), "code 1000");
    }
}
