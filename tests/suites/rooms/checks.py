def no_double_booking(s0, sT):
    rows = sT.query(
        "SELECT room, day, slot, COUNT(*) FROM bookings"
        " GROUP BY room, day, slot HAVING COUNT(*) > 1"
    )
    return len(rows) == 0, {"double": rows}
