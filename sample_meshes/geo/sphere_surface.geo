// Surface mesh (triangles only, gmsh -2) of the unit sphere centred at the origin.
// OpenCASCADE kernel: the sphere is one surface (tag 1) with a seam curve (tag 2) and
// two pole points. No Physical groups on purpose: gmsh then writes every mesh element
// it has (the seam's line elements too, as Edges), with elementary tags as refs
// (triangles ref 1, seam edges ref 2).
SetFactory("OpenCASCADE");
Sphere(1) = {0, 0, 0, 1};
Mesh.MeshSizeMin = 0.08;
Mesh.MeshSizeMax = 0.08;
