//! Smooths a synthetic 8-bit image, takes its Laplacian and counts the grey levels of the result.
use gpk::{Border, Context, ConvolveParams, Filter, HistogramParams, ImageMut, ImageRef, Normalize};

fn main() -> gpk::Result<()> {
    let (width, height) = (64, 48);
    let pixels: Vec<u8> =
        (0..width * height).map(|i| (((i % width) * 4) ^ ((i / width) * 5)) as u8).collect();
    let mut ctx = Context::new()?;
    println!("gpk {} on {:?}", gpk::version(), ctx.backend());

    let smooth5 = Filter::named("smooth5")?;
    let mut smoothed = vec![0u8; width * height];
    ctx.convolve(
        &ConvolveParams::new(&smooth5).normalize(Normalize::Sum),
        &ImageRef::new(&pixels, width, height, 1)?,
        &mut ImageMut::new(&mut smoothed, width, height, 1)?,
    )?;

    let lp3 = Filter::named("lp3")?;
    let mut edges = vec![0u8; width * height];
    ctx.convolve(
        &ConvolveParams::new(&lp3).border(Border::Zero).normalize(Normalize::MinMax),
        &ImageRef::new(&smoothed, width, height, 1)?,
        &mut ImageMut::new(&mut edges, width, height, 1)?,
    )?;

    let hist = ctx.histogram(&HistogramParams::new(256), &edges)?;
    let commonest = (0..256).max_by_key(|&b| hist.counts()[b]).unwrap_or(0);
    println!("Laplacian: grey level {commonest} is the commonest ({} pixels)", hist.counts()[commonest]);
    Ok(())
}
