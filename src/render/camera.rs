//! An orbit camera: it looks at a target point from a distance, at a yaw and pitch around it.

use glam::{Mat4, Vec3};

/// A camera orbiting `target`, z up (the scene's convention: x east, y north, z up).
///
/// The eye sits at `target + distance · (cos pitch · cos yaw, cos pitch · sin yaw, sin pitch)`,
/// so yaw turns around the vertical axis and pitch raises the eye above the horizon. The
/// projection is a right-handed OpenGL perspective (clip z in [-1, 1]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitCamera {
    /// The point looked at.
    pub target: Vec3,
    /// Angle around the vertical axis, in radians.
    pub yaw: f32,
    /// Angle above the horizontal plane, in radians, kept within ±89°.
    pub pitch: f32,
    /// Distance from the eye to the target, in metres.
    pub distance: f32,
    /// Vertical field of view, in radians.
    pub fovy: f32,
    /// Near clipping plane distance.
    pub near: f32,
    /// Far clipping plane distance.
    pub far: f32,
}

/// Radians of orbit per pixel of mouse drag.
const ORBIT_PER_PIXEL: f32 = 0.005;
/// Largest pitch, short of the pole where the view matrix degenerates.
const MAX_PITCH: f32 = 89.0 * std::f32::consts::PI / 180.0;
/// Distance factor per wheel step.
const ZOOM_PER_STEP: f32 = 0.9;

impl OrbitCamera {
    /// A camera looking at the box `[lo, hi]` from a three-quarter view above it, far enough
    /// to see all of it.
    pub fn framing(lo: Vec3, hi: Vec3) -> Self {
        let centre = 0.5 * (lo + hi);
        let radius = 0.5 * (hi - lo).length().max(1e-3);
        let fovy = 50f32.to_radians();
        let distance = 0.85 * radius / (0.5 * fovy).sin();
        Self {
            target: Vec3::new(centre.x, centre.y, lo.z + 0.25 * (hi.z - lo.z)),
            yaw: -35f32.to_radians(),
            pitch: 28f32.to_radians(),
            distance,
            fovy,
            near: distance * 0.01,
            far: distance * 4.0,
        }
    }

    /// A camera at `eye` looking at `target` (a scene file's camera), with a vertical field of
    /// view of `fovy` radians; falls back to looking down from 10 m when the two coincide.
    pub fn looking_at(eye: Vec3, target: Vec3, fovy: f32) -> Self {
        let offset = eye - target;
        let distance = offset.length();
        let (offset, distance) = if distance.is_finite() && distance > 1e-4 {
            (offset, distance)
        } else {
            (Vec3::Z * 10.0, 10.0)
        };
        Self {
            target,
            yaw: offset.y.atan2(offset.x),
            pitch: (offset.z / distance)
                .clamp(-1.0, 1.0)
                .asin()
                .clamp(-MAX_PITCH, MAX_PITCH),
            distance,
            fovy: fovy.clamp(1f32.to_radians(), 170f32.to_radians()),
            near: distance * 0.01,
            far: distance * 10.0,
        }
    }

    /// Where the eye is.
    pub fn eye(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        self.target + self.distance * Vec3::new(cp * cy, cp * sy, sp)
    }

    /// World → eye transform.
    pub fn view(&self) -> Mat4 {
        glam::camera::rh::view::look_at_mat4(self.eye(), self.target, Vec3::Z)
    }

    /// Eye → clip transform for a viewport of the given width/height ratio.
    pub fn projection(&self, aspect: f32) -> Mat4 {
        glam::camera::rh::proj::opengl::perspective(
            self.fovy,
            aspect.max(1e-6),
            self.near,
            self.far,
        )
    }

    /// `projection · view`.
    pub fn view_projection(&self, aspect: f32) -> Mat4 {
        self.projection(aspect) * self.view()
    }

    /// Pixels per metre at unit distance for a viewport `height` pixels high:
    /// `height / (2 tan(fovy / 2))`. A sphere of radius r at distance d covers
    /// `2 r · point_scale / d` pixels.
    pub fn point_scale(&self, height: u32) -> f32 {
        height as f32 / (2.0 * (0.5 * self.fovy).tan())
    }

    /// Turns the camera by a mouse drag of `dx`, `dy` pixels.
    pub fn orbit(&mut self, dx: f32, dy: f32) {
        self.yaw += dx * ORBIT_PER_PIXEL;
        self.pitch = (self.pitch + dy * ORBIT_PER_PIXEL).clamp(-MAX_PITCH, MAX_PITCH);
    }

    /// Moves the eye closer (positive `steps`) or farther (negative), keeping the near and far
    /// planes proportional to the distance.
    pub fn zoom(&mut self, steps: f32) {
        let factor = ZOOM_PER_STEP.powf(steps);
        let distance = (self.distance * factor).clamp(0.05, 1e6);
        let ratio = distance / self.distance;
        self.distance = distance;
        self.near *= ratio;
        self.far *= ratio;
    }

    /// Moves the target (and the eye with it) by `right` and `forward` fractions of the
    /// distance along the ground, and `up` vertically.
    pub fn pan(&mut self, right: f32, forward: f32, up: f32) {
        let (sy, cy) = self.yaw.sin_cos();
        // Horizontal direction from the eye towards the target, and its right-hand side.
        let ahead = Vec3::new(-cy, -sy, 0.0);
        let side = ahead.cross(Vec3::Z);
        self.target += self.distance * (right * side + forward * ahead + up * Vec3::Z);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_projects_to_the_centre_and_eye_is_at_distance() {
        let cam = OrbitCamera::framing(Vec3::ZERO, Vec3::new(64.0, 64.0, 40.0));
        assert!((cam.eye().distance(cam.target) - cam.distance).abs() < 1e-3);
        let clip = cam.view_projection(1.5) * cam.target.extend(1.0);
        assert!((clip.x / clip.w).abs() < 1e-5 && (clip.y / clip.w).abs() < 1e-5);
    }

    #[test]
    fn pan_moves_right_as_seen_on_screen() {
        let mut cam = OrbitCamera::framing(Vec3::ZERO, Vec3::splat(10.0));
        let before = cam.target;
        cam.pan(0.1, 0.0, 0.0);
        // The old target now appears left of the centre.
        let clip = cam.view_projection(1.0) * before.extend(1.0);
        assert!(clip.x / clip.w < -0.01, "{clip:?}");
        cam.pan(-0.1, 0.2, 0.0);
        let clip = cam.view_projection(1.0) * before.extend(1.0);
        assert!(
            clip.y / clip.w < -0.01,
            "forward moves the old target down: {clip:?}"
        );
    }

    #[test]
    fn looking_at_puts_the_eye_where_asked() {
        let eye = Vec3::new(-30.0, 10.0, 25.0);
        let target = Vec3::new(5.0, 5.0, 2.0);
        let cam = OrbitCamera::looking_at(eye, target, 0.8);
        assert!(cam.eye().distance(eye) < 1e-3, "{} vs {eye}", cam.eye());
        let cam = OrbitCamera::looking_at(target, target, 0.8);
        assert!(cam.eye().is_finite() && cam.distance > 0.0);
    }

    #[test]
    fn zoom_and_orbit_stay_in_range() {
        let mut cam = OrbitCamera::framing(Vec3::ZERO, Vec3::splat(10.0));
        let d = cam.distance;
        cam.zoom(1.0);
        assert!((cam.distance - 0.9 * d).abs() < 1e-4);
        cam.orbit(0.0, 1e6);
        assert!(cam.pitch <= MAX_PITCH);
    }
}
