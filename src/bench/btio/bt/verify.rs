//! NPB BT's verification (`verify.f`): the RMS norms of the final residual
//! (`xcr`) and of the solution error (`xce`) against the reference values of
//! the class, each within a relative `1e-8`, and the time step equal to the
//! class's. BT-IO's error norm is the mean over the dumps read back of each
//! dump's error norm, with reference values of its own.

use std::fmt::Write as _;

use super::super::input::Class;

/// NPB's tolerance on every norm and on `dt`.
pub const EPSILON: f64 = 1e-8;

/// One class's reference values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reference {
    /// The class.
    pub class: Class,
    /// Grid points per direction.
    pub n: u64,
    /// Time steps.
    pub niter: u64,
    /// The time step.
    pub dt: f64,
    /// RMS norms of the residual.
    pub xcr: [f64; 5],
    /// RMS norms of the solution error, without I/O.
    pub xce: [f64; 5],
    /// RMS norms of the solution error averaged over the dumps (BT-IO).
    pub xce_io: [f64; 5],
}

/// NPB 3.3's reference values, as data.
pub const REFERENCES: [Reference; 7] = [
    Reference {
        class: Class::S,
        n: 12,
        niter: 60,
        dt: 1.0e-2,
        xcr: [
            1.7034283709541311e-01,
            1.2975252070034097e-02,
            3.2527926989486055e-02,
            2.6436421275166801e-02,
            1.9211784131744430e-01,
        ],
        xce: [
            4.9976913345811579e-04,
            4.5195666782961927e-05,
            7.3973765172921357e-05,
            7.3821238632439731e-05,
            8.9269630987491446e-04,
        ],
        xce_io: [
            0.1149036328945e+02,
            0.9156788904727e+00,
            0.2857899428614e+01,
            0.2598273346734e+01,
            0.2652795397547e+02,
        ],
    },
    Reference {
        class: Class::W,
        n: 24,
        niter: 200,
        dt: 0.8e-3,
        xcr: [
            0.1125590409344e+03,
            0.1180007595731e+02,
            0.2710329767846e+02,
            0.2469174937669e+02,
            0.2638427874317e+03,
        ],
        xce: [
            0.4419655736008e+01,
            0.4638531260002e+00,
            0.1011551749967e+01,
            0.9235878729944e+00,
            0.1018045837718e+02,
        ],
        xce_io: [
            0.6729594398612e+02,
            0.5264523081690e+01,
            0.1677107142637e+02,
            0.1508721463436e+02,
            0.1477018363393e+03,
        ],
    },
    Reference {
        class: Class::A,
        n: 64,
        niter: 200,
        dt: 0.8e-3,
        xcr: [
            1.0806346714637264e+02,
            1.1319730901220813e+01,
            2.5974354511582465e+01,
            2.3665622544678910e+01,
            2.5278963211748344e+02,
        ],
        xce: [
            4.2348416040525025e+00,
            4.4390282496995698e-01,
            9.6692480136345650e-01,
            8.8302063039765474e-01,
            9.7379901770829278e+00,
        ],
        xce_io: [
            0.6482218724961e+02,
            0.5066461714527e+01,
            0.1613931961359e+02,
            0.1452010201481e+02,
            0.1420099377681e+03,
        ],
    },
    Reference {
        class: Class::B,
        n: 102,
        niter: 200,
        dt: 3.0e-4,
        xcr: [
            1.4233597229287254e+03,
            9.9330522590150238e+01,
            3.5646025644535285e+02,
            3.2485447959084092e+02,
            3.2707541254659363e+03,
        ],
        xce: [
            5.2969847140936856e+01,
            4.4632896115670668e+00,
            1.3122573342210174e+01,
            1.2006925323559144e+01,
            1.2459576151035986e+02,
        ],
        xce_io: [
            0.1477545106464e+03,
            0.1108895555053e+02,
            0.3698065590331e+02,
            0.3310505581440e+02,
            0.3157928282563e+03,
        ],
    },
    Reference {
        class: Class::C,
        n: 162,
        niter: 200,
        dt: 1.0e-4,
        xcr: [
            0.62398116551764615e+04,
            0.50793239190423964e+03,
            0.15423530093013596e+04,
            0.13302387929291190e+04,
            0.11604087428436455e+05,
        ],
        xce: [
            0.16462008369091265e+03,
            0.11497107903824313e+02,
            0.41207446207461508e+02,
            0.37087651059694167e+02,
            0.36211053051841265e+03,
        ],
        xce_io: [
            0.2597156483475e+03,
            0.1985384289495e+02,
            0.6517950485788e+02,
            0.5757235541520e+02,
            0.5215668188726e+03,
        ],
    },
    Reference {
        class: Class::D,
        n: 408,
        niter: 250,
        dt: 0.2e-4,
        xcr: [
            0.2533188551738e+05,
            0.2346393716980e+04,
            0.6294554366904e+04,
            0.5352565376030e+04,
            0.3905864038618e+05,
        ],
        xce: [
            0.3100009377557e+03,
            0.2424086324913e+02,
            0.7782212022645e+02,
            0.6835623860116e+02,
            0.6065737200368e+03,
        ],
        xce_io: [
            0.3813781566713e+03,
            0.3160872966198e+02,
            0.9593576357290e+02,
            0.8363391989815e+02,
            0.7063466087423e+03,
        ],
    },
    Reference {
        class: Class::E,
        n: 1020,
        niter: 250,
        dt: 0.4e-5,
        xcr: [
            0.9795372484517e+05,
            0.9739814511521e+04,
            0.2467606342965e+05,
            0.2092419572860e+05,
            0.1392138856939e+06,
        ],
        xce: [
            0.4327562208414e+03,
            0.3699051964887e+02,
            0.1089845040954e+03,
            0.9462517622043e+02,
            0.7765512765309e+03,
        ],
        xce_io: [
            0.4729898413058e+03,
            0.4145899331704e+02,
            0.1192850917138e+03,
            0.1032746026932e+03,
            0.8270322177634e+03,
        ],
    },
];

/// The RMS norm NPB reports from per-component sums of squares over the whole
/// grid: `sqrt(sum / Π(n_d − 2))`.
pub fn rms(sums: [f64; 5], grid: [u64; 3]) -> [f64; 5] {
    sums.map(|s| {
        let mut v = s;
        for n in grid {
            v /= (n - 2) as f64;
        }
        v.sqrt()
    })
}

/// The outcome of NPB's verification.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Norms {
    /// The class recognised from grid and steps, if any (NPB's `U` otherwise).
    pub class: Option<String>,
    /// Whether the error norm is BT-IO's mean over the dumps.
    pub over_dumps: bool,
    /// RMS norms of the residual.
    pub xcr: [f64; 5],
    /// RMS norms of the solution error.
    pub xce: [f64; 5],
    /// The reference values compared with, if the class is known.
    pub xcr_ref: Option<[f64; 5]>,
    /// The reference values compared with, if the class is known.
    pub xce_ref: Option<[f64; 5]>,
    /// Whether `dt` is the class's.
    pub dt_matches: bool,
    /// Every comparison within [`EPSILON`] (false for an unknown class).
    pub verified: bool,
}

impl Norms {
    /// Compare `xcr`, `xce` with the references for `grid`, `niter` and `dt`.
    pub fn check(
        grid: [u64; 3],
        niter: u64,
        dt: f64,
        xcr: [f64; 5],
        xce: [f64; 5],
        over_dumps: bool,
    ) -> Norms {
        let reference = REFERENCES
            .iter()
            .find(|r| grid == [r.n; 3] && niter == r.niter);
        let within = |got: &[f64; 5], want: &[f64; 5]| {
            got.iter()
                .zip(want)
                .all(|(g, w)| ((g - w) / w).abs() <= EPSILON)
        };
        match reference {
            None => Norms {
                class: None,
                over_dumps,
                xcr,
                xce,
                xcr_ref: None,
                xce_ref: None,
                dt_matches: false,
                verified: false,
            },
            Some(r) => {
                let xce_ref = if over_dumps { r.xce_io } else { r.xce };
                let dt_matches = (dt - r.dt).abs() <= EPSILON;
                Norms {
                    class: Some(format!("{:?}", r.class)),
                    over_dumps,
                    xcr,
                    xce,
                    xcr_ref: Some(r.xcr),
                    xce_ref: Some(xce_ref),
                    dt_matches,
                    verified: dt_matches && within(&xcr, &r.xcr) && within(&xce, &xce_ref),
                }
            }
        }
    }

    /// NPB's verification printout.
    pub fn npb_text(&self) -> String {
        let mut s = String::new();
        let e = |v: f64| fortran_e(v);
        match (&self.class, self.xcr_ref, self.xce_ref) {
            (Some(class), Some(xcr_ref), Some(xce_ref)) => {
                let _ = writeln!(s, " Verification being performed for class {class}");
                let _ = writeln!(s, " accuracy setting for epsilon = {}", e(EPSILON));
                if !self.dt_matches {
                    let _ = writeln!(s, " DT does not match the reference value");
                }
                for (title, got, want) in [
                    (" Comparison of RMS-norms of residual", self.xcr, xcr_ref),
                    (
                        " Comparison of RMS-norms of solution error",
                        self.xce,
                        xce_ref,
                    ),
                ] {
                    let _ = writeln!(s, "{title}");
                    for m in 0..5 {
                        let dif = ((got[m] - want[m]) / want[m]).abs();
                        let tag = if dif <= EPSILON {
                            "          "
                        } else {
                            " FAILURE: "
                        };
                        let _ =
                            writeln!(s, "{tag}{:2}{}{}{}", m + 1, e(got[m]), e(want[m]), e(dif));
                    }
                }
                let _ = writeln!(
                    s,
                    " Verification {}",
                    if self.verified {
                        "Successful"
                    } else {
                        "failed"
                    }
                );
            }
            _ => {
                let _ = writeln!(s, " Unknown class");
                let _ = writeln!(s, " RMS-norms of residual");
                for m in 0..5 {
                    let _ = writeln!(s, "          {:2}{}", m + 1, e(self.xcr[m]));
                }
                let _ = writeln!(s, " RMS-norms of solution error");
                for m in 0..5 {
                    let _ = writeln!(s, "          {:2}{}", m + 1, e(self.xce[m]));
                }
                let _ = writeln!(s, " No reference values provided");
                let _ = writeln!(s, " No verification performed");
                if self.xcr.iter().chain(&self.xce).any(|v| !v.is_finite()) {
                    let _ = writeln!(
                        s,
                        " The solution diverged (norms not finite): the time step dt is too long for this grid"
                    );
                }
            }
        }
        s
    }
}

/// Fortran's `E20.13`: `0.` then 13 digits, `E`, sign and two exponent digits,
/// right-aligned in 20 columns; a diverged norm prints as gfortran prints it
/// (`NaN`, `Infinity`, `-Infinity`).
pub fn fortran_e(v: f64) -> String {
    if v == 0.0 {
        return format!("{:>20}", "0.0000000000000E+00");
    }
    if v.is_nan() {
        return format!("{:>20}", "NaN");
    }
    if v.is_infinite() {
        return format!("{:>20}", if v > 0.0 { "Infinity" } else { "-Infinity" });
    }
    // v = 0.d₁d₂… × 10^exp with d₁ ≠ 0.
    let sci = format!("{:.12e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').expect("scientific notation");
    let exp: i32 = exp.parse().expect("an exponent");
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if v < 0.0 { "-" } else { "" };
    let e = exp + 1;
    let text = format!(
        "{sign}0.{digits}E{}{:02}",
        if e < 0 { '-' } else { '+' },
        e.abs()
    );
    format!("{text:>20}")
}
