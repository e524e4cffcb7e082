module github.com/swarmscore/swarmscore

go 1.26.8
