// The row's index, split over the row dims below (rows past the end read row 0).
    var rem = select(0u, row, live);
