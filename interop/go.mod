module github.com/dialogtrust/dialogtrust/interop

go 1.26.0

replace github.com/dialogtrust/dialogtrust => ../
