"""Reports of diagnosed runs: chart specs (`charts`), inline-SVG drawing (`svg`), ``report.html`` (`html`),
PNG export with matplotlib (`png`), and the two-run comparison page (`compare`)."""
