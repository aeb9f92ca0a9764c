//! The wind: incompressible Euler flow on the scene's unstructured tetrahedral mesh, solved by
//! semi-Lagrangian advection and an exact discrete projection, every device step a gml kernel
//! or a gml reduction.
//!
//! # Discretisation
//!
//! Velocity `u` and pressure `p` live on the vertices (P1–P1). For a tetrahedron `T` of volume
//! `V_T` with barycentric functions `φ_j` (constant gradients `∇φ_j`, `Σ_j ∇φ_j = 0`):
//!
//! - **Lumped mass** `m_i = Σ_{T∋i} V_T / 4`: the vertex's share of the volume.
//! - **Gradient** `(G p)_i = Σ_{T∋i} (V_T/4) ∇p_T` with `∇p_T = Σ_{j∈T} p_j ∇φ_j`; the vertex
//!   gradient is `M_L⁻¹ G p`, the volume-weighted mean of its tetrahedra's gradients.
//! - **Weak divergence** `D = −Gᵀ`: `(D u)_j = −Σ_{T∋j} V_T ∇φ_j · ū_T`, `ū_T` the mean of the
//!   velocities of `T`'s vertices. Plus the prescribed inflow flux
//!   `F_j = Σ_{inflow triangles t∋j} (A_t / 3) (u_in,t · n_t)` (`n_t` the outward unit normal,
//!   `u_in,t` the mean of the inflow values of `t`'s vertices; negative where the wind enters).
//!   The **discrete divergence** at a vertex where the pressure is unknown is
//!   `div_j = ((D u)_j + F_j) / m_j` (1/s); its norm is the volume-weighted RMS over those
//!   vertices, `sqrt(Σ m_j div_j² / Σ m_j)`.
//! - **Boundary kinds** from the boundary triangles' references: each side is inflow when the
//!   wind blows into it (`direction · n < −sin 2°`), outflow when out of it (`> sin 2°`), slip
//!   otherwise; the ground and the top are slip. A vertex takes the strongest kind of its
//!   triangles (inflow > slip > outflow). The **velocity projector** `P_i` of a vertex: zero at
//!   inflow vertices (Dirichlet: the profile), the identity at outflow and interior vertices,
//!   and at slip vertices the removal of the normal components: with `n_r` the area-weighted
//!   unit normal of the vertex's triangles of slip reference `r`, `P = I − n₁n₁ᵀ` for one slip
//!   reference, `P = I − n₁n₁ᵀ − n₂'n₂'ᵀ` for two (`n₂'` the part of `n₂` orthogonal to `n₁`,
//!   normalised), and `P = 0` for three or more (or when `n₂'` is shorter than sin 2°).
//!   The **pressure** is fixed, `p = 0`, at every vertex of an outflow triangle, and it is
//!   unknown everywhere else, except where free velocities barely reach a vertex's
//!   divergence (`A_jj` below 1 % of its value with every velocity free: the edge where two
//!   inflow sides meet, the ground row of an inflow side), where it is fixed too: zeroing the
//!   divergence there would take the few free neighbours to ~1/reach times the flow's speed. The issue that specified this solver fixed it
//!   only at outflow vertices *not on an inflow triangle*; on the edge where an inflow side
//!   meets an outflow side that leaves a divergence the projection cannot remove (`D u` lacks
//!   the outflow triangles' own flux, so even a uniform wind keeps `−Σ (A_t/3) u·n_t / m_j`
//!   there, as the CPU reference showed), and CG stalls on it.
//! - **Exact discrete projection**: `A p = b` with `A = Gᵀ P M_L⁻¹ G` (symmetric positive
//!   semi-definite, restricted to the unknown vertices) and `b = −((D u*) + F) / dt`; then
//!   `u = u* − dt P M_L⁻¹ G p`. Here `P` is also zero at the fixed-pressure vertices: the
//!   projection does not correct the outflow's velocities, which keep the advected values (a
//!   zero-gradient outflow); correcting them let a mode grow along the outflow sides' ground
//!   row (25 m/s after ~650 steps of the valley, NaN after 830 on a 2^19 mesh). The new field has `D u + F = 0` exactly at every unknown vertex
//!   (to the solver's tolerance), which the cheaper approximate projection with the P1
//!   stiffness matrix does not: on the valley it left ~4e-3 1/s, which bunches the snow.
//!   `A`'s pressure can hold checkerboard-like modes that `G` does not see; the pressure view
//!   smooths them, the projection does not need to.
//! - **Pressure solve**: conjugate gradients in double with a Jacobi preconditioner
//!   ([`solver`]), started from the last pressure moved by the least-squares combination of
//!   the last solves' corrections ([`history`]): the residual those slow, checkerboard-like
//!   modes leave changes little from step to step, and on the valley stepping with the frames
//!   the start alone meets the tolerance in most steps.
//! - **Advection**, semi-Lagrangian: the departure point `x_i − dt u_i` (computed relative to
//!   the vertex, so f32 keeps 0.1 mm at 4 km) is located by a barycentric walk through face
//!   neighbours from where the vertex's last walk ended (the departure point moves little
//!   between steps: 0.16 hops on the valley, against 2.93 from a tetrahedron of the vertex's
//!   ball, where the first walk starts), the velocity interpolated linearly there; a
//!   departure point outside the domain is clamped to the exit face that the walk from the
//!   vertex's ball reached (a walk from the last one's tetrahedron that leaves the domain is
//!   walked again from there, so the clamp does not stick to an old boundary face). Then
//!   inflow vertices get the profile and every other vertex `u* = P u_interpolated` (slip
//!   vertices lose their normal components).
//! - **Time step** of its own (`wind.step`), by default from a Courant number of about 1 in the
//!   bottom layer: at the frame's 0.02 s the Courant number is 0.005–0.02 and linear
//!   semi-Lagrangian advection diffuses like first-order upwind whatever the step, at 25–50×
//!   the cost. The mesh's topology is fixed; deposited snow changes the flow domain only through
//!   a ground refresh ([`refresh`]), which regrades the columns and projects the wind again.
//!
//! A library: it imports the device layer, `gml`, the scene and the terrain, never the
//! simulation that couples it to the snow, the drawing or the command line.

pub mod profile;
pub mod refresh;

pub mod boundary;
pub mod diagonal;
pub mod error;
pub mod geometry;
pub mod history;
pub mod kernels;
pub mod operator;
pub mod piece;
pub mod setup;
pub mod solver;

pub use boundary::{Boundary, Kind};
pub use error::{Result, WindError};
pub use refresh::{GroundPlan, GroundPlanner, RefreshStats, RefreshTimes};
pub use solver::{AIR_DENSITY, Settings, Solver, StepStats};
