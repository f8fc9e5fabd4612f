// expect: int-width-literal
let maximumUpload: Int = 5_000_000_000
