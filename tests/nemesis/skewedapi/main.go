// Command skewedapi is the api with its clock shifted by -clock-offset,
// given before the command (skewedapi -clock-offset=2s serve): the
// nemesis runs its second API process 2 s ahead of the first, which runs
// cmd/api. It takes the api's commands and settings (tests/internal/skewed).
package main

import "shelf/tests/internal/skewed"

func main() { skewed.Main() }
