// ... and along the first (its stride in parameter word WORD); the step of slot A along the row
// (parameter word STEP_WORD).
    o{{A}} += rem * P({{WORD}}u);
    let step{{A}} = P({{STEP_WORD}}u);
