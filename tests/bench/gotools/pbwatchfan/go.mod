module pbwatchfan

go 1.26
