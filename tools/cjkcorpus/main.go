// Command cjkcorpus writes the CJK benchmark corpus of `make bench` (tools/bench.sh):
// synthetic Chinese-like text, the same bytes on every machine. Chinese, Japanese and
// Korean text has no spaces, so its pre-tokens run from one punctuation mark to the next
// (20-150 bytes of 3-byte characters), where English's are words; that is what it
// measures. It is not real Chinese: characters are drawn from ~500 of the most frequent
// simplified Chinese characters with Zipf weights (the k-th most frequent drawn in
// proportion to 1/k), in clauses of 4-40 characters ended by Chinese punctuation, with
// now and then a number, a year or a Latin word as Chinese text has them, and a
// paragraph break every few sentences. (No real corpus of that size ships with the
// repository or is reachable offline.)
//
//	go run ./tools/cjkcorpus -o FILE [-mb 4]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
)

// frequent lists ~500 of the most frequent simplified Chinese characters, most frequent
// first.
const frequent = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坐集编宝谈府拉黑且随格尽剑讲布杀微怕母调局根曾准团段终乐切级克精哪官示冷域"

func main() {
	out := flag.String("o", "", "the file to write")
	mb := flag.Int("mb", 4, "its size in MiB (at least)")
	flag.Parse()
	if *out == "" || *mb <= 0 {
		fmt.Fprintln(os.Stderr, "usage: cjkcorpus -o FILE [-mb 4]")
		os.Exit(2)
	}
	if err := write(*out, *mb<<20); err != nil {
		fmt.Fprintln(os.Stderr, "cjkcorpus:", err)
		os.Exit(1)
	}
}

func write(path string, size int) error {
	chars := []rune(frequent)
	cum := make([]float64, len(chars)) // Zipf: weight 1/(k+1)
	total := 0.0
	for k := range chars {
		total += 1 / float64(k+1)
		cum[k] = total
	}
	draw := func(rng *rand.Rand) rune {
		x := rng.Float64() * total
		return chars[min(sort.SearchFloat64s(cum, x), len(chars)-1)]
	}
	latin := []string{"AI", "GPU", "iPhone", "Python", "CPU", "Linux", "COVID-19", "NBA", "5G", "App"}
	clauseEnd := []rune("，，，，，，。。。、；：")
	sentenceEnd := []rune("。。。。？！")
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(20261126, 1))
	written := 0
	for written < size {
		var para []rune
		for range 3 + rng.IntN(6) { // sentences
			for c := range 1 + rng.IntN(4) { // clauses
				if c > 0 {
					para = append(para, clauseEnd[rng.IntN(len(clauseEnd))])
				}
				for range 4 + rng.IntN(37) {
					switch x := rng.IntN(1000); {
					case x < 6:
						para = append(para, []rune(fmt.Sprintf("%d年", 1900+rng.IntN(126)))...)
					case x < 12:
						para = append(para, []rune(fmt.Sprintf("%d", rng.IntN(10000)))...)
					case x < 16:
						para = append(para, []rune(latin[rng.IntN(len(latin))])...)
					case x < 20:
						para = append(para, '“')
						for range 2 + rng.IntN(6) {
							para = append(para, draw(rng))
						}
						para = append(para, '”')
					default:
						para = append(para, draw(rng))
					}
				}
			}
			para = append(para, sentenceEnd[rng.IntN(len(sentenceEnd))])
		}
		para = append(para, '\n')
		n, err := w.WriteString(string(para))
		if err != nil {
			return err
		}
		written += n
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
