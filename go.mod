module gptkit

go 1.26
