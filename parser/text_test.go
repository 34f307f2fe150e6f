package parser

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/litcrawl/litcrawl/record"
)

func readRepoFile(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join("..", filepath.FromSlash(rel)))
}

func TestPlainText(t *testing.T) {
	tests := map[string]string{
		"<p>One.</p><p>Two &gt; one.</p>":   "One. Two > one.",
		"a\x00b":                            "a b",
		"H<sub>2</sub>O and <i>in vivo</i>": "H2O and in vivo",
		"cost <inline-formula><tex-math>$ sim$</tex-math></inline-formula> n": "cost $ sim$ n",
		"<math><mi>x</mi><mo>&lt;</mo><mn>3</mn></math> holds":                "x<3 holds",
		"a < b and c > d": "a < b and c > d",
		"x<y":             "x<y",
		"<jats:p>Namespaced <jats:italic>tags</jats:italic></jats:p>":         "Namespaced tags",
		"  spaced\u00a0\u00a0out \n text ":                                    "spaced out text",
		"<bold>Bold</bold><uri>https://x.org</uri><span class=\"a\">s</span>": "Boldhttps://x.orgs",
		"": "",
	}
	for in, want := range tests {
		if got := plainText(in); got != want {
			t.Errorf("plainText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitAuthors(t *testing.T) {
	tests := map[string][]string{
		"A B, C D":                            {"A B", "C D"},
		"A;B;C":                               {"A", "B", "C"},
		"A B ,&nbsp;C D ,&nbsp;E":             {"A B", "C D", "E"},
		"A B,&nbsp;C D":                       {"A B", "C D"},
		"A , B , C":                           {"A", "B", "C"},
		"A\u00a0,\u00a0B":                     {"A", "B"},
		"王磊、李娜，张伟":                            {"王磊", "李娜", "张伟"},
		"Jiashu ZhangYiming, MollyYiming, Xu": {"Jiashu ZhangYiming", "MollyYiming", "Xu"},
		", ,":                                 nil,
	}
	for in, want := range tests {
		if got := splitAuthors(in); !slices.Equal(got, want) {
			t.Errorf("splitAuthors(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitTitleLine(t *testing.T) {
	tests := [][3]string{
		{"FlashFlex: Accommodating Large Language Model Training over Heterogeneous Environment FlashFlex：适应异构环境下的大型语言模型训练",
			"FlashFlex: Accommodating Large Language Model Training over Heterogeneous Environment", "FlashFlex：适应异构环境下的大型语言模型训练"},
		{"Adaptive ViFi 自适应ViFi:面向车载网络", "Adaptive ViFi", "自适应ViFi:面向车载网络"},
		{"Effects of X on Y. X对Y的影响。", "Effects of X on Y.", "X对Y的影响。"},
		{"English only", "English only", ""},
		{"只有中文标题", "", "只有中文标题"},
		// A Chinese title that begins with Latin words of its own.
		{"Automated Testing of C/C++ Embedded Projects C/C++ 嵌入式项目的自动化测试",
			"Automated Testing of C/C++ Embedded Projects", "C/C++ 嵌入式项目的自动化测试"},
		{"FedSense: Federated Sensing at the Network Edge FedSense: 网络边缘的联邦感知",
			"FedSense: Federated Sensing at the Network Edge", "FedSense: 网络边缘的联邦感知"},
		{"Scheduling LLM Inference on Shared GPU Clusters GPU 集群上的 LLM 推理调度",
			"Scheduling LLM Inference on Shared GPU Clusters", "GPU 集群上的 LLM 推理调度"},
		// A repeated term that the English title needs stays English.
		{"Benchmarking GPU Kernels on the GPU 在GPU上对内核进行基准测试",
			"Benchmarking GPU Kernels on the GPU", "在GPU上对内核进行基准测试"},
		{"Learning to Rank 排序学习", "Learning to Rank", "排序学习"},
		// A term the Chinese title has further on, or after a word no
		// English title ends on, stays English.
		{"Efficient GPU Sorting Algorithms for Modern GPU 面向现代GPU的高效排序算法", "Efficient GPU Sorting Algorithms for Modern GPU", "面向现代GPU的高效排序算法"},
		{"Long COVID-19 Symptoms in Adults after COVID-19 成人新冠后的长期症状", "Long COVID-19 Symptoms in Adults after COVID-19", "成人新冠后的长期症状"},
		// A capitalised word used twice is no term.
		{"Learning to Rank with Deep Learning 基于深度学习的排序学习", "Learning to Rank with Deep Learning", "基于深度学习的排序学习"},
		{"Graph Neural Networks for Dynamic Graph 面向动态图的图神经网络", "Graph Neural Networks for Dynamic Graph", "面向动态图的图神经网络"},
	}
	for _, tt := range tests {
		en, cn := splitTitleLine(tt[0])
		if en != tt[1] || cn != tt[2] {
			t.Errorf("splitTitleLine(%q) = %q, %q; want %q, %q", tt[0], en, cn, tt[1], tt[2])
		}
	}
}

func TestHeadLines(t *testing.T) {
	type want struct {
		kind                             lineKind
		impact                           float64
		zone                             int
		subject, q, cat, date, doi, jrnl string
	}
	tests := map[string]want{
		"IF 2 4区 计算机科学": {kind: kindImpact, impact: 2, zone: 4, subject: "计算机科学"},
		"IF 0.6":        {kind: kindImpact, impact: 0.6},
		"IF 1.2 4区 计算机科学 Q3 ENGINEERING, ELECTRICAL & ELECTRONIC Pub Date : 2024-03-01 DOI: 10.23919/ICN.2024.0001": {
			kind: kindImpact, impact: 1.2, zone: 4, subject: "计算机科学", q: "Q3", cat: "ENGINEERING, ELECTRICAL & ELECTRONIC", date: "2024-03-01", doi: "10.23919/ICN.2024.0001"},
		"arXiv - CS - Distributed, Parallel, and Cluster Computing Pub Date : 2024-09-02 DOI: arxiv-2409.01075": {
			kind: kindMeta, date: "2024-09-02", doi: "arxiv-2409.01075", jrnl: "arXiv - CS - Distributed, Parallel, and Cluster Computing"},
		"Pub Date : 2010-11-01DOI: 10.1109/TPDS.2010.123": {kind: kindMeta, date: "2010-11-01", doi: "10.1109/TPDS.2010.123"},
		"引用次数: 12":                   {kind: kindCitation},
		"IFTTT recipes for everyone": {kind: kindText},
		"京ICP备2023020795号-1":         {kind: kindNoise},
		"上一页 1 2 3 下一页":              {kind: kindNoise},
		"首页 > 最新文献":                  {kind: kindNoise},
		"筛选":                         {kind: kindNoise},
		"X最新文献_第7页":                  {kind: kindHeading},
	}
	for in, w := range tests {
		l := classify(in)
		var h headInfo
		if l.head != nil {
			h = *l.head
		}
		got := want{l.kind, h.impact, h.zone, h.subject, h.jcrQuartile, h.jcrCategory, h.published, h.doi, h.journal}
		if got != w {
			t.Errorf("classify(%q) = %+v, want %+v", in, got, w)
		}
	}
	if l := classify("引用次数: 12"); l.count() != 12 {
		t.Errorf("citations = %d", l.count())
	}
}

func TestCollapseMatchesRecord(t *testing.T) {
	for _, s := range []string{"", " a ", "a  b", "a\u00a0\u3000b", "中文 \t\n 文字", "x\x00y", "clean text", "bad\xffbyte", " lead", "trail ", "a\u2003b"} {
		if got, want := collapse(s), record.CollapseSpace(s); got != want {
			t.Errorf("collapse(%q) = %q, record.CollapseSpace = %q", s, got, want)
		}
	}
}

func TestCollapseBytesMatchesCollapse(t *testing.T) {
	for _, s := range []string{"", " a ", "a  b", "a\u00a0\u3000b", "中文 \t\n 文字", "x\x00y", "clean", "bad\xffbyte", "  bad \xff  x ", "\xff", "a\u2003b"} {
		if got, want := collapseBytes([]byte(s)), collapse(s); got != want {
			t.Errorf("collapseBytes(%q) = %q, collapse = %q", s, got, want)
		}
	}
}

func TestISODate(t *testing.T) {
	tests := map[string]string{
		"2024-09-02":               "2024-09-02",
		"2024-09-02T00:00:00":      "2024-09-02",
		"2024/9/2":                 "2024-09-02",
		" 2010 - 11 - 01DOI: 10.1": "2010-11-01",
		"vol 12345 2024.1.31":      "2024-01-31",
		"2024-13-01":               "",
		"2024-02":                  "",
		"12024-01-05":              "2024-01-05",
		"":                         "",
		"DOI: 10.1109/5.771073":    "",
	}
	for in, want := range tests {
		if got := isoDate(in); got != want {
			t.Errorf("isoDate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLastPageFromPager(t *testing.T) {
	tests := []struct {
		lines   []string
		current int
		want    int
	}{
		{[]string{"上一页 7 8 9"}, 9, 9},
		{[]string{"首页 上一页 8 9"}, 9, 9},
		{[]string{"上一页 7 8 9 下一页"}, 9, 0}, // a next link: more pages
		{[]string{"1 2 3 4 5"}, 3, 0},     // a higher number
		{[]string{"上一页 7 8 9"}, 0, 0},     // the current page is unknown
		{nil, 9, 0},
	}
	for _, tt := range tests {
		if got := lastPageFromPager(tt.lines, tt.current); got != tt.want {
			t.Errorf("lastPageFromPager(%q, %d) = %d, want %d", tt.lines, tt.current, got, tt.want)
		}
	}
}
